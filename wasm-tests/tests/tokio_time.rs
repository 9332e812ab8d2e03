//! `keep_alive`, `lapsed` and `with_lock` on tokio time (`TokioClock`), under paused time:
//! tokio jumps to the next timer whenever every task is idle, so seconds of lease time pass
//! at once and exactly. Native only; in the browser this file has no tests.
#![cfg(not(target_arch = "wasm32"))]

use alkstore_mem::{LockOptions, with_lock};
use alkstore_mem_tokio::{LockError, LockRegistry, Timestamp, TokioClock};
use core::time::Duration;
use tokio::time::Instant;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[tokio::test(start_paused = true)]
async fn keep_alive_keeps_a_lease_for_ten_seconds_of_paused_time() {
    let registry = LockRegistry::new(TokioClock::new());
    let lock = registry.try_lock("job", "a", ms(300)).unwrap().unwrap();
    let token = lock.token();
    let kept = tokio::time::timeout(Duration::from_secs(10), lock.keep_alive(ms(100))).await;
    assert!(kept.is_err(), "keep_alive gave up: {kept:?}");
    assert!(lock.is_held(), "a 300 ms lease, kept alive for 10 s");
    let info = registry.holder("job").unwrap();
    assert_eq!(info.token(), token);
    assert!(
        info.deadline() >= Timestamp::from_millis(10_200),
        "renewed to now + 300 ms at most 100 ms ago: {:?}",
        info.deadline()
    );
}

#[tokio::test(start_paused = true)]
async fn keep_alive_clamps_an_interval_above_the_ttl_to_half_of_it() {
    // A typo (every 500 ms on a 100 ms lease) used to renew nothing and end with Expired at
    // the deadline; it is clamped to 50 ms and the lease is kept.
    let registry = LockRegistry::new(TokioClock::new());
    let lock = registry.try_lock("job", "a", ms(100)).unwrap().unwrap();
    let kept = tokio::time::timeout(ms(1_000), lock.keep_alive(ms(500))).await;
    assert!(kept.is_err(), "keep_alive gave up: {kept:?}");
    assert!(lock.is_held());
    assert!(
        lock.deadline() >= Timestamp::from_millis(1_050),
        "{:?}",
        lock.deadline()
    );
}

#[tokio::test(start_paused = true)]
async fn the_work_reads_the_lease_it_is_guarded_by_while_keep_alive_runs() {
    // The shape the docs advise, which did not compile when keep_alive took `&mut self`:
    // the work reads token(), deadline() and is_held() of the lock keep_alive renews.
    async fn work(token: u64, lock: &alkstore_mem_tokio::TokioLock) -> u64 {
        for _ in 0..20 {
            tokio::time::sleep(ms(100)).await;
            assert!(lock.is_held(), "kept alive");
        }
        token + lock.deadline().as_millis()
    }
    let registry = LockRegistry::new(TokioClock::new());
    let lock = registry.try_lock("job", "a", ms(300)).unwrap().unwrap();
    let out = tokio::select! {
        lost = lock.keep_alive(ms(100)) => panic!("keep_alive gave up: {lost}"),
        out = work(lock.token(), &lock) => out,
    };
    // Renewed every 100 ms: at 1.9 s at the latest (2.0 s if its timer ran first).
    assert!((1 + 2_200..=1 + 2_300).contains(&out), "{out}");
}

#[tokio::test(start_paused = true)]
async fn keep_alive_ends_with_a_readable_expired_when_force_released() {
    let registry = LockRegistry::new(TokioClock::new());
    let lock = registry.try_lock("job", "a", ms(300)).unwrap().unwrap();
    let breaker = registry.clone();
    tokio::spawn(async move {
        tokio::time::sleep(ms(1_050)).await; // between two renewals
        breaker.force_release("job");
    });
    let start = Instant::now();
    let lost = lock.keep_alive(ms(100)).await;
    assert_eq!(
        start.elapsed(),
        ms(1_050),
        "woken by the force-release itself"
    );
    match &lost {
        LockError::Expired {
            name,
            token,
            ttl,
            deadline,
            now,
        } => {
            assert_eq!(
                (name.as_str(), *token, *ttl),
                ("job", lock.token(), ms(300))
            );
            let (renewed_at_1000, released_at) =
                (Timestamp::from_millis(1_300), Timestamp::from_millis(1_050));
            assert_eq!((*deadline, *now), (renewed_at_1000, released_at));
        }
        other => panic!("expected Expired, got {other:?}"),
    }
    assert_eq!(
        lost.to_string(),
        "lease on lock \"job\" (fencing token 1, ttl 300ms) was released or force-released 250ms before its deadline"
    );
}

#[tokio::test(start_paused = true)]
async fn lapsed_resolves_exactly_at_the_deadline() {
    let registry = LockRegistry::new(TokioClock::new());
    let mut lock = registry.try_lock("job", "a", ms(500)).unwrap().unwrap();
    tokio::time::advance(ms(300)).await;
    lock.renew(ms(500)).unwrap(); // deadline 800 ms
    let start = Instant::now();
    let why = lock.lapsed().await;
    assert_eq!(start.elapsed(), ms(500), "lapsed at the renewed deadline");
    assert_eq!(
        why.to_string(),
        "lease on lock \"job\" (fencing token 1) lapsed just now, at the end of its 500ms ttl"
    );
    assert!(!lock.is_held());
    assert!(registry.holder("job").is_none());
}

#[tokio::test(start_paused = true)]
async fn keep_alive_holds_the_lease_while_another_task_watches_it() {
    // Another task checks the registry every 100 ms for 5 s, while keep_alive (selected
    // against it, as the docs advise) renews a 300 ms lease every 100 ms.
    let registry = LockRegistry::new(TokioClock::new());
    let lock = registry.try_lock("job", "a", ms(300)).unwrap().unwrap();
    let watcher = registry.clone();
    let watch = tokio::spawn(async move {
        for _ in 0..50 {
            tokio::time::sleep(ms(100)).await;
            assert!(watcher.holder("job").is_some(), "the lease lapsed");
        }
    });
    tokio::select! {
        lost = lock.keep_alive(ms(100)) => panic!("keep_alive gave up: {lost}"),
        done = watch => done.unwrap(),
    }
    assert!(lock.is_held());
}

#[tokio::test(start_paused = true)]
async fn with_lock_keeps_the_lease_while_a_long_body_runs() {
    let registry = LockRegistry::new(TokioClock::new());
    let seen = registry.clone();
    let start = Instant::now();
    let options = LockOptions::ttl(ms(300)).wait(ms(0)).keep_alive(ms(0));
    let token = with_lock(&registry, "job", "a", options, |lease| async move {
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(seen.holder("job").unwrap().token(), lease.token());
        lease.token()
    })
    .await
    .unwrap()
    .expect("the name was free");
    assert_eq!(start.elapsed(), Duration::from_secs(5));
    assert_eq!(token, 1);
    assert!(registry.holder("job").is_none(), "released afterwards");
}
