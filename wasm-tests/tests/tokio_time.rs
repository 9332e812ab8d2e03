//! `keep_alive`, `lapsed` and `with_lock` on tokio time (`TokioClock`), under paused time:
//! tokio jumps to the next timer whenever every task is idle, so seconds of lease time pass
//! at once and exactly. Native only; in the browser this file has no tests.
#![cfg(not(target_arch = "wasm32"))]

use alkstore_mem::with_lock;
use alkstore_mem_tokio::{LockError, LockRegistry, Timestamp, TokioClock};
use core::time::Duration;
use tokio::time::Instant;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[tokio::test(start_paused = true)]
async fn keep_alive_keeps_a_lease_for_ten_seconds_of_paused_time() {
    let registry = LockRegistry::new(TokioClock::new());
    let mut lock = registry.try_lock("job", "a", ms(300)).unwrap().unwrap();
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
async fn keep_alive_returns_expired_when_the_ttl_is_shorter_than_every() {
    let registry = LockRegistry::new(TokioClock::new());
    let mut lock = registry.try_lock("job", "a", ms(100)).unwrap().unwrap();
    let start = Instant::now();
    let lost = lock.keep_alive(ms(200)).await;
    assert_eq!(start.elapsed(), ms(200), "the first renewal, on time");
    match lost {
        LockError::Expired {
            name,
            token,
            deadline,
            now,
        } => {
            assert_eq!((name.as_str(), token), ("job", lock.token()));
            assert_eq!(deadline, Timestamp::from_millis(100));
            assert_eq!(now, Timestamp::from_millis(200));
        }
        other => panic!("expected Expired, got {other:?}"),
    }
    assert!(!lock.is_held());
}

#[tokio::test(start_paused = true)]
async fn lapsed_resolves_exactly_at_the_deadline() {
    let registry = LockRegistry::new(TokioClock::new());
    let mut lock = registry.try_lock("job", "a", ms(500)).unwrap().unwrap();
    tokio::time::advance(ms(300)).await;
    lock.renew(ms(500)).unwrap(); // deadline 800 ms
    let start = Instant::now();
    lock.lapsed().await;
    assert_eq!(start.elapsed(), ms(500), "lapsed at the renewed deadline");
    assert!(!lock.is_held());
    assert!(registry.holder("job").is_none());
}

#[tokio::test(start_paused = true)]
async fn keep_alive_holds_the_lease_while_another_task_watches_it() {
    // Another task checks the registry every 100 ms for 5 s, while keep_alive (selected
    // against it, as the docs advise) renews a 300 ms lease every 100 ms.
    let registry = LockRegistry::new(TokioClock::new());
    let mut lock = registry.try_lock("job", "a", ms(300)).unwrap().unwrap();
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
    let token = with_lock(&registry, "job", "a", ms(300), ms(0), |lease| async move {
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
