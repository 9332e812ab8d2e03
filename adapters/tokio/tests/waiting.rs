//! Waiting acquire on tokio: exact timing under paused time, and stress on a current-thread
//! runtime with paused time and on a multi-thread runtime with real time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use alkstore_mem_tokio::{Acquire, LockRegistry, TokioClock};
use tokio::task::JoinSet;
use tokio::time::Instant;

const NAMES: [&str; 3] = ["tenant-1/job/a", "tenant-1/job/b", "tenant-2/job/c"];

fn assert_send_static<T: Send + 'static>(_: &T) {}

#[tokio::test(start_paused = true)]
async fn waiter_is_granted_exactly_when_the_lease_lapses() {
    let registry = LockRegistry::new(TokioClock::new());
    registry
        .try_lock("job", "a", Duration::from_millis(250))
        .unwrap()
        .unwrap()
        .detach();
    let start = Instant::now();
    let lock = registry
        .acquire("job", "b", Duration::from_secs(1))
        .timeout(Duration::from_secs(5))
        .await
        .unwrap()
        .expect("granted at the lapse");
    assert_eq!(start.elapsed(), Duration::from_millis(250));
    assert_eq!(lock.owner(), "b");
}

#[tokio::test(start_paused = true)]
async fn wait_elapses_on_tokio_time() {
    let registry = LockRegistry::new(TokioClock::new());
    let _holder = registry
        .try_lock("job", "a", Duration::from_secs(60))
        .unwrap()
        .unwrap();
    let start = Instant::now();
    let got = registry
        .acquire("job", "b", Duration::from_secs(1))
        .timeout(Duration::from_millis(300))
        .await
        .unwrap();
    assert!(got.is_none());
    assert_eq!(start.elapsed(), Duration::from_millis(300));
    assert_eq!(registry.waiters(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_spawned_waiter_is_handed_the_lease_on_release() {
    let registry = LockRegistry::new(TokioClock::new());
    let holder = registry
        .try_lock("job", "a", Duration::from_secs(60))
        .unwrap()
        .unwrap();
    let waiting: Acquire<TokioClock> = registry
        .acquire("job", "b", Duration::from_secs(1))
        .timeout(Duration::from_secs(10));
    assert_send_static(&waiting);
    let task = tokio::spawn(waiting);
    tokio::time::sleep(Duration::from_millis(40)).await;
    holder.release();
    let lock = task.await.unwrap().unwrap().unwrap();
    assert_eq!((lock.owner(), lock.token()), ("b", 2));
}

/// Many tasks acquire and release a few names with waits. Inside each critical section a
/// flag per name checks mutual exclusion; every attempt must end served or timed out, and
/// nothing may stay queued.
async fn stress(tasks: usize, rounds: usize, hold: Duration, wait: Duration) -> (usize, usize) {
    let registry = LockRegistry::new(TokioClock::new());
    let inside: Arc<[AtomicBool; 3]> = Arc::new(Default::default());
    let entered = Arc::new(AtomicUsize::new(0));
    let mut set = JoinSet::new();
    for t in 0..tasks {
        let (registry, inside, entered) = (registry.clone(), inside.clone(), entered.clone());
        set.spawn(async move {
            let owner = format!("task-{t}");
            let (mut served, mut timed_out) = (0, 0);
            for round in 0..rounds {
                let n = (t + round) % NAMES.len();
                let acquired = registry
                    .acquire(NAMES[n], &owner, Duration::from_secs(30))
                    .timeout(wait)
                    .await
                    .unwrap();
                match acquired {
                    Some(lock) => {
                        assert!(
                            !inside[n].swap(true, Ordering::SeqCst),
                            "two holders inside {}",
                            NAMES[n]
                        );
                        entered.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(hold).await;
                        inside[n].store(false, Ordering::SeqCst);
                        assert!(lock.release(), "the lease outlived the critical section");
                        served += 1;
                    }
                    None => timed_out += 1,
                }
            }
            (served, timed_out)
        });
    }
    let (mut served, mut timed_out) = (0, 0);
    while let Some(result) = set.join_next().await {
        let (s, t) = result.unwrap();
        served += s;
        timed_out += t;
    }
    assert_eq!(
        served + timed_out,
        tasks * rounds,
        "every attempt is served or times out"
    );
    assert_eq!(served, entered.load(Ordering::Relaxed));
    assert_eq!(registry.waiters(), 0, "nothing left queued");
    for name in NAMES {
        assert!(registry.holder(name).is_none());
    }
    (served, timed_out)
}

#[tokio::test(start_paused = true)]
async fn stress_under_paused_time() {
    let (served, timed_out) = stress(
        60,
        10,
        Duration::from_millis(10),
        Duration::from_millis(150),
    )
    .await;
    eprintln!("paused time: {served} served, {timed_out} timed out");
    assert!(
        served > 0 && timed_out > 0,
        "the load should both serve and time out: {served}/{timed_out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stress_on_a_multi_thread_runtime() {
    let (served, timed_out) = stress(
        24,
        20,
        Duration::from_micros(200),
        Duration::from_millis(500),
    )
    .await;
    eprintln!("multi-thread: {served} served, {timed_out} timed out");
    assert!(served > 0);
}
