//! Keeping a lease alive on tokio time: `keep_alive`, `lapsed`, `with_lock` in spawned
//! tasks, and handles held in structs. Paused time makes every instant exact.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use alkstore_mem_tokio::{
    Clock, Lock, LockError, LockOptions, LockRegistry, TokioAcquire, TokioClock, TokioLock,
    TokioLockRegistry, with_lock,
};
use tokio::time::Instant;

const TTL: Duration = Duration::from_millis(300);
const EVERY: Duration = Duration::from_millis(100);

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

fn assert_send_static<T: Send + 'static>(_: &T) {}
fn assert_send<T: Send>(_: &T) {}

#[tokio::test(start_paused = true)]
async fn keep_alive_holds_the_lease_across_many_ttls_then_reports_expired_after_force_release() {
    let registry = LockRegistry::new(TokioClock::new());
    let lock = registry.try_lock("job", "a", TTL).unwrap().unwrap();
    let token = lock.token();
    assert_send(&lock.keep_alive(EVERY));

    let renewing = tokio::spawn(async move {
        let lost = lock.keep_alive(EVERY).await;
        (lock, lost)
    });

    // 3 s in 30 ms steps: ten ttls, and the lease never lapses.
    for _ in 0..100 {
        tokio::time::advance(ms(30)).await;
        let holder = registry.holder("job").expect("kept alive");
        assert_eq!(holder.token(), token, "renewals keep the token");
        assert!(registry.try_lock("job", "b", TTL).unwrap().is_none());
    }
    assert!(!renewing.is_finished());

    let ended = registry.force_release("job").expect("it was held");
    assert_eq!(ended.token(), token);
    let forced_at = Instant::now();
    let (lock, lost) = renewing.await.unwrap();
    assert!(
        forced_at.elapsed() <= EVERY,
        "the next renewal notices: {:?}",
        forced_at.elapsed()
    );
    assert!(
        matches!(&lost, LockError::Expired { name, token: t, .. } if name == "job" && *t == token),
        "{lost:?}"
    );
    assert!(!lock.is_held());
    assert!(!lock.release(), "already ended: false, not an error");
    assert!(registry.holder("job").is_none());
}

#[tokio::test(start_paused = true)]
async fn keep_alive_with_zero_every_renews_at_a_third_of_the_ttl() {
    let registry = LockRegistry::new(TokioClock::new());
    let lock = registry.try_lock("job", "a", ms(300)).unwrap().unwrap();
    tokio::select! {
        lost = lock.keep_alive(Duration::ZERO) => panic!("lost the lease: {lost}"),
        () = tokio::time::sleep(ms(1_050)) => {}
    }
    // Renewals at 100, 200, …, 1000 ms: the last one set the deadline to 1300 ms.
    assert_eq!(lock.remaining(), ms(250));
    assert_eq!(lock.ttl(), ms(300));
    assert!(lock.release());
}

#[tokio::test(start_paused = true)]
async fn lapsed_resolves_exactly_at_the_deadline() {
    let registry = LockRegistry::new(TokioClock::new());
    let lock = registry.try_lock("job", "a", TTL).unwrap().unwrap();
    assert_send(&lock.lapsed());
    let start = Instant::now();
    lock.lapsed().await;
    assert_eq!(start.elapsed(), TTL);
    assert!(!lock.is_held());
    assert_eq!(lock.remaining(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn renewals_push_lapsed_out() {
    let registry = LockRegistry::new(TokioClock::new());
    let start = Instant::now();
    let mut lock = registry.try_lock("job", "a", TTL).unwrap().unwrap();

    // `renew` takes `&mut self` and `lapsed` borrows the handle, so renew between waits:
    // each renewal moves the instant `lapsed` resolves at.
    tokio::time::advance(ms(200)).await;
    lock.renew(TTL).unwrap(); // deadline 500 ms
    assert_eq!(lock.remaining(), TTL);
    tokio::time::advance(ms(200)).await;
    lock.renew(ms(500)).unwrap(); // deadline 900 ms, and the ttl is now 500 ms
    assert_eq!(lock.ttl(), ms(500));
    tokio::time::advance(ms(100)).await;
    assert_eq!(lock.remaining(), ms(400));

    lock.lapsed().await;
    assert_eq!(start.elapsed(), ms(900), "not at 300 ms, nor at 500 ms");
    assert!(matches!(lock.renew(TTL), Err(LockError::Expired { .. })));
}

#[tokio::test(start_paused = true)]
async fn lapsed_resolves_when_the_lease_is_force_released() {
    let registry = LockRegistry::new(TokioClock::new());
    let lock = registry
        .try_lock("job", "a", Duration::from_secs(3600))
        .unwrap()
        .unwrap();
    let start = Instant::now();
    tokio::select! {
        why = lock.lapsed() => panic!("lapsed before anything happened: {why}"),
        () = tokio::time::sleep(ms(50)) => {}
    }
    registry.force_release("job").unwrap();
    // Check the lease is gone the moment lapsed is asked again.
    tokio::select! {
        why = lock.lapsed() => assert!(matches!(why, LockError::Expired { .. })),
        () = tokio::time::sleep(ms(1)) => panic!("a lease already ended is lapsed at once"),
    }
    assert_eq!(start.elapsed(), ms(50));
}

#[tokio::test(start_paused = true)]
async fn with_lock_in_a_spawned_task_outlives_its_ttl_by_keeping_alive() {
    let registry = LockRegistry::new(TokioClock::new());
    let inside = registry.clone();
    let job = async move {
        with_lock(
            &inside,
            "report",
            "worker-1",
            LockOptions::ttl(TTL).wait(ms(0)).keep_alive(ms(0)),
            |lease| async move {
                // Ten ttls of work.
                tokio::time::sleep(ms(3_000)).await;
                lease.token()
            },
        )
        .await
    };
    assert_send_static(&job);
    let start = Instant::now();
    let task = tokio::spawn(job);

    tokio::time::sleep(ms(1_000)).await;
    let holder = registry.holder("report").expect("kept alive by renewals");
    assert_eq!(holder.owner(), "worker-1");
    assert!(holder.deadline() > registry.clock().now());
    tokio::time::sleep(ms(1_500)).await;
    assert!(
        registry
            .try_lock("report", "worker-2", TTL)
            .unwrap()
            .is_none()
    );

    let token = task.await.unwrap().unwrap().expect("the name was free");
    assert_eq!(token, holder.token());
    assert_eq!(start.elapsed(), ms(3_000));
    assert!(
        registry.holder("report").is_none(),
        "released after the body"
    );
    let next = registry
        .try_lock("report", "worker-2", TTL)
        .unwrap()
        .unwrap();
    assert!(next.token() > token);
}

/// Sets its flag when dropped: shows that a body was stopped, not left running.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(start_paused = true)]
async fn with_lock_stops_the_body_and_returns_expired_when_the_lease_is_force_released() {
    let registry = LockRegistry::new(TokioClock::new());
    let steps = Arc::new(AtomicU32::new(0));
    let finished = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicBool::new(false));

    let task = {
        let (inside, steps, finished, dropped) = (
            registry.clone(),
            steps.clone(),
            finished.clone(),
            dropped.clone(),
        );
        tokio::spawn(async move {
            with_lock(
                &inside,
                "import",
                "worker-1",
                LockOptions::ttl(TTL).wait(ms(0)).keep_alive(ms(0)),
                |_lease| async move {
                    let _guard = DropFlag(dropped);
                    for _ in 0..100 {
                        tokio::time::sleep(ms(50)).await;
                        steps.fetch_add(1, Ordering::SeqCst);
                    }
                    finished.store(true, Ordering::SeqCst);
                },
            )
            .await
        })
    };

    tokio::time::sleep(ms(1_025)).await;
    let ended = registry
        .force_release("import")
        .expect("held while the body runs");
    let forced_at = Instant::now();
    let result = task.await.unwrap();
    let noticed_after = forced_at.elapsed();

    assert!(
        matches!(&result, Err(LockError::Expired { name, token, .. })
            if name == "import" && *token == ended.token()),
        "{result:?}"
    );
    assert!(
        noticed_after <= TTL / 3,
        "the next renewal (every ttl/3) notices: {noticed_after:?}"
    );
    assert!(dropped.load(Ordering::SeqCst), "the body was dropped");
    assert!(
        !finished.load(Ordering::SeqCst),
        "the body did not run to its end"
    );
    let at_stop = steps.load(Ordering::SeqCst);
    assert!((20..=24).contains(&at_stop), "{at_stop} steps of 50 ms");
    tokio::time::sleep(ms(1_000)).await;
    assert_eq!(
        steps.load(Ordering::SeqCst),
        at_stop,
        "and it stays stopped"
    );
}

#[tokio::test(start_paused = true)]
async fn with_lock_gives_up_after_its_wait_without_running_the_body() {
    let registry = LockRegistry::new(TokioClock::new());
    let _held = registry
        .try_lock("import", "a", ms(10_000))
        .unwrap()
        .unwrap();
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    let start = Instant::now();
    let options = LockOptions::ttl(TTL).wait(ms(400));
    let result = with_lock(&registry, "import", "b", options, |_| async move {
        flag.store(true, Ordering::SeqCst);
    })
    .await;
    assert_eq!(result, Ok(None));
    assert_eq!(start.elapsed(), ms(400));
    assert!(!ran.load(Ordering::SeqCst));
}

/// A job that owns its lease: a plain struct, no generics, no bounds to repeat.
#[derive(Debug)]
struct Job {
    lock: TokioLock,
    rows: u32,
}

impl Job {
    async fn run(mut self) -> (u64, u32) {
        tokio::select! {
            lost = self.lock.keep_alive(EVERY) => panic!("lost the lease: {lost}"),
            () = tokio::time::sleep(ms(1_000)) => {}
        }
        self.rows += 1;
        (self.lock.token(), self.rows)
    }
}

/// The same, generic over the clock: `Lock<C>` asks nothing of `C`, so neither does this.
#[derive(Debug)]
struct Holder<C> {
    lock: Lock<C>,
}

#[tokio::test(start_paused = true)]
async fn a_struct_holding_a_tokio_lock_can_be_spawned_without_bounds() {
    let registry: TokioLockRegistry = LockRegistry::new(TokioClock::new());
    let job = Job {
        lock: registry.try_lock("job", "a", TTL).unwrap().unwrap(),
        rows: 0,
    };
    assert_send_static(&job);
    let (token, rows) = tokio::spawn(job.run()).await.unwrap();
    assert_eq!((token, rows), (1, 1));
    assert!(
        registry.holder("job").is_none(),
        "dropping the job released the lease"
    );

    let holder = Holder {
        lock: registry.try_lock("other", "a", TTL).unwrap().unwrap(),
    };
    let moved = tokio::spawn(async move { holder }).await.unwrap();
    assert_eq!(moved.lock.token(), 2);
    drop(moved);
    assert!(registry.holder("other").is_none());

    let waiting: TokioAcquire = registry.acquire("job", "b", TTL).timeout(ms(0));
    let lock = tokio::spawn(waiting).await.unwrap().unwrap().unwrap();
    assert_eq!(lock.token(), 3);
}
