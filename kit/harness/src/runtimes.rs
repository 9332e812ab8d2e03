//! Runtimes and edges on the shared server: handles dropped outside a runtime, as their
//! runtime shuts down, or on a thread without one; a store whose runtime is gone; durations at
//! their extremes; `timeout(ZERO)` answering exactly as `try_lock`.

use std::time::{Duration, Instant};

use alkstore_kit::CommonConfig;
use alkstore_mem::LockError;

use crate::fixture::Fixture;
use crate::support::{fresh_scope, run, runtime, store, store_at};

const TTL: Duration = Duration::from_secs(5);

/// `Duration::MAX` ttls and waits, 1 ns and 1 µs ttls: granted, renewed, never a spin or a
/// panic; `keep_alive` refuses a ttl far under twice the `io_timeout`.
pub fn extreme_ttls_and_waits_work<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let mut big = locks
            .try_lock("max", "a", Duration::MAX)
            .await
            .unwrap()
            .unwrap();
        big.renew(Duration::MAX).await.unwrap();
        assert!(locks.holder("max").await.unwrap().is_some());
        let short = Duration::from_millis(50);
        let waited = locks
            .acquire("max", "b", Duration::MAX)
            .timeout(short)
            .await;
        assert!(waited.unwrap().is_none());
        assert!(big.release().await.unwrap());
        let acquire = locks
            .acquire("max", "b", Duration::MAX)
            .timeout(Duration::MAX);
        let w = acquire.await.unwrap().unwrap();
        // keep_alive(ZERO) with a huge ttl: must not spin or panic.
        let r = tokio::time::timeout(Duration::from_millis(100), w.keep_alive(Duration::ZERO));
        assert!(r.await.is_err());
        assert!(w.release().await.unwrap());
        for ttl in [
            Duration::from_nanos(1),
            Duration::from_micros(1),
            Duration::from_nanos(1500),
        ] {
            let l = locks.try_lock("tiny", "a", ttl).await.unwrap().unwrap();
            drop(l);
        }
        let t = locks.try_lock("tiny2", "a", Duration::from_nanos(1)).await;
        let t = t.unwrap().unwrap();
        let r = tokio::time::timeout(Duration::from_secs(1), t.keep_alive(Duration::ZERO)).await;
        assert!(matches!(r, Ok(LockError::InvalidTtl { .. })), "{r:?}");
    });
}

/// `acquire(..).timeout(ZERO)` answers exactly as `try_lock`: free, busy, a lapsed lease with
/// a queue (the head gets it), and validation errors.
pub fn timeout_zero_answers_exactly_as_try_lock<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let zero = Duration::ZERO;
        let a = locks
            .acquire("z", "a", TTL)
            .timeout(zero)
            .await
            .unwrap()
            .unwrap();
        assert!(locks.try_lock("z", "b", TTL).await.unwrap().is_none());
        let busy = locks.acquire("z", "b", TTL).timeout(zero).await;
        assert!(busy.unwrap().is_none());
        let queued = {
            let locks = locks.clone();
            tokio::spawn(async move { locks.acquire("z", "q", TTL).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        a.detach();
        locks
            .advance_test_clock(TTL + Duration::from_secs(1))
            .await
            .unwrap();
        assert!(locks.try_lock("z", "c", TTL).await.unwrap().is_none());
        let behind = locks.acquire("z", "c", TTL).timeout(zero).await;
        assert!(behind.unwrap().is_none());
        let q = queued.await.unwrap().unwrap().unwrap();
        assert_eq!(q.owner(), "q");
        let e1 = locks.try_lock("", "o", TTL).await.unwrap_err();
        let e2 = locks.acquire("", "o", TTL).timeout(zero).await.unwrap_err();
        assert_eq!(e1, e2);
    });
}

/// Handles, waits and stores dropped on threads without a runtime (and after the runtime):
/// no panic.
pub fn drops_outside_a_runtime_do_not_panic<F: Fixture>(f: &F) {
    let rt = runtime();
    let locks = rt.block_on(store(f));
    let lock = rt.block_on(locks.try_lock("d", "a", TTL)).unwrap().unwrap();
    let mut waiting = Box::pin(locks.acquire("d", "b", TTL));
    rt.block_on(async {
        let _ = tokio::time::timeout(Duration::from_millis(100), &mut waiting).await;
    });
    let clone = locks.clone();
    std::thread::spawn(move || {
        drop(waiting);
        drop(lock);
        drop(clone);
    })
    .join()
    .expect("no panic");
    drop(rt);
    std::thread::spawn(move || drop(locks))
        .join()
        .expect("no panic");
}

/// A store used from another runtime works while its own lives, and answers promptly once
/// its runtime is gone.
pub fn a_store_from_a_dropped_runtime_answers_promptly<F: Fixture>(f: &F) {
    let rt1 = runtime();
    let locks = rt1.block_on(store(f));
    let rt2 = runtime();
    let l = rt2
        .block_on(locks.try_lock("r", "a", TTL))
        .unwrap()
        .unwrap();
    rt2.block_on(l.release()).unwrap();
    let w = rt2.block_on(locks.acquire("r", "a", TTL)).unwrap().unwrap();
    rt2.block_on(w.release()).unwrap();
    drop(rt1);
    let start = Instant::now();
    let r = rt2.block_on(locks.try_lock("r2", "a", TTL));
    eprintln!(
        "after its runtime was dropped: {r:?} in {:?}",
        start.elapsed()
    );
    assert!(start.elapsed() < Duration::from_millis(2500));
}

/// A lock dropped as its runtime shuts down (the shape of `#[tokio::main]` returning) is
/// released.
pub fn a_lock_dropped_when_its_runtime_shuts_down_is_released<F: Fixture>(f: &F) {
    let (url, scope) = (f.url(), fresh_scope());
    let connect = || store_at(f, &url, &scope, CommonConfig::new());
    runtime().block_on(async {
        let locks = connect().await;
        let _lock = locks.try_lock("exit", "w", Duration::from_secs(30)).await;
        // Returns: `_lock` is dropped at the end of the block, then the runtime.
    });
    run(async {
        let locks = connect().await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let h = locks.holder("exit").await.unwrap();
        assert!(h.is_none(), "the lease outlived its runtime: {h:?}");
    });
}

/// A lock dropped on a thread without a runtime is released before the drop returns.
pub fn a_lock_dropped_on_a_thread_without_a_runtime_is_released_before_the_drop_returns<
    F: Fixture,
>(
    f: &F,
) {
    let rt = runtime();
    let locks = rt.block_on(store(f));
    let ttl = Duration::from_secs(30);
    let lock = rt
        .block_on(locks.try_lock("plain", "w", ttl))
        .unwrap()
        .unwrap();
    std::thread::spawn(move || drop(lock)).join().unwrap();
    let h = rt.block_on(locks.holder("plain")).unwrap();
    assert!(h.is_none(), "still held after the drop returned: {h:?}");
}
