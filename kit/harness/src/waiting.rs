//! Waiting and watching on the shared server: FIFO hand-off without barging, a lapsed lease
//! taken by the first waiter at its deadline, bounded and dropped waits, `keep_alive` and
//! `lapsed`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use alkstore_mem::LockError;

use crate::fixture::Fixture;
use crate::support::{io, run, store, store_with};

const TTL: Duration = Duration::from_secs(30);

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// Waiters are served in arrival order, handed the lease inside the release; no barging.
pub fn waiters_are_served_in_order_with_hand_off_and_no_barging<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let first = locks.try_lock("q", "holder", TTL).await.unwrap().unwrap();
        let mut waiting = Vec::new();
        for i in 0..4 {
            let store = locks.clone();
            waiting.push(tokio::spawn(async move {
                let owner = format!("w{i}");
                let lock = store.acquire("q", &owner, TTL).await.unwrap().unwrap();
                let token = lock.token();
                tokio::time::sleep(ms(20)).await;
                assert!(lock.release().await.unwrap());
                (i, token)
            }));
            // Let each queue before the next arrives.
            tokio::time::sleep(ms(50)).await;
        }
        assert!(first.release().await.unwrap());
        // Handed straight to w0: a try_lock in between finds it busy.
        assert_eq!(locks.holder("q").await.unwrap().unwrap().owner(), "w0");
        assert!(locks.try_lock("q", "barger", TTL).await.unwrap().is_none());
        let mut last = 0;
        for (expected, task) in waiting.into_iter().enumerate() {
            let (i, token) = task.await.unwrap();
            assert_eq!(i, expected);
            assert!(token > last);
            last = token;
        }
        assert!(locks.try_lock("q", "late", TTL).await.unwrap().is_some());
    });
}

/// The first waiter re-checks at the holder's deadline and takes a lease that lapsed.
pub fn a_waiter_takes_a_lease_that_lapses_at_its_deadline<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let held = locks
            .try_lock("lapse", "a", ms(300))
            .await
            .unwrap()
            .unwrap();
        let start = Instant::now();
        let lock = locks.acquire("lapse", "b", TTL).await.unwrap().unwrap();
        let took = start.elapsed();
        assert!(lock.token() > held.token());
        assert!(took < ms(400), "{took:?}");
        held.detach();
    });
}

/// Bounded waits end with `None` (zero waits at once) and leave the queue; the test clock
/// ends a wait too (it is on the server's timeline).
pub fn bounded_waits_end_with_none_and_leave_the_queue<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let held = locks.try_lock("b", "a", TTL).await.unwrap().unwrap();
        let zero = locks.acquire("b", "x", TTL).timeout(Duration::ZERO).await;
        assert!(zero.unwrap().is_none());
        let start = Instant::now();
        let waited = locks.acquire("b", "y", TTL).timeout(ms(200)).await.unwrap();
        assert!(waited.is_none());
        assert!(start.elapsed() >= ms(190) && start.elapsed() < ms(600));
        let store2 = locks.clone();
        let long = tokio::spawn(async move {
            let wait = Duration::from_secs(3600);
            store2.acquire("b", "z", TTL).timeout(wait).await
        });
        tokio::time::sleep(ms(100)).await;
        locks
            .advance_test_clock(Duration::from_secs(3600))
            .await
            .unwrap();
        let out = tokio::time::timeout(Duration::from_secs(2), long).await;
        drop(out.unwrap().unwrap().unwrap());
        drop(held);
    });
}

/// A dropped waiter leaves the queue, and the next one is served.
pub fn a_dropped_waiter_leaves_the_queue_and_passes_on_a_handed_lease<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let held = locks.try_lock("d", "a", TTL).await.unwrap().unwrap();
        let store2 = locks.clone();
        let dropped = tokio::spawn(async move { store2.acquire("d", "dropped", TTL).await });
        tokio::time::sleep(ms(50)).await;
        let store3 = locks.clone();
        let next = tokio::spawn(async move { store3.acquire("d", "next", TTL).await });
        tokio::time::sleep(ms(50)).await;
        dropped.abort();
        let _ = dropped.await;
        tokio::time::sleep(ms(50)).await;
        assert!(held.release().await.unwrap());
        let lock = tokio::time::timeout(Duration::from_secs(2), next).await;
        assert_eq!(lock.unwrap().unwrap().unwrap().unwrap().owner(), "next");
    });
}

/// keep_alive renews; lapsed resolves once the lease is lost, with why.
pub fn keep_alive_renews_and_lapsed_resolves_when_lost<F: Fixture>(f: &F) {
    run(async {
        // keep_alive needs a ttl of twice the io_timeout: a 600 ms lease, a 300 ms io_timeout
        // (room for a loaded machine).
        let locks = store_with(f, io(ms(300))).await;
        let lock = locks.try_lock("k", "a", ms(600)).await.unwrap().unwrap();
        let token = lock.token();
        let alive = tokio::time::timeout(ms(1500), lock.keep_alive(ms(100))).await;
        assert!(alive.is_err(), "still renewing after 1.5 s of a 600 ms ttl");
        assert_eq!(locks.holder("k").await.unwrap().unwrap().token(), token);
        let start = Instant::now();
        let why = lock.lapsed().await;
        let took = start.elapsed();
        assert!(
            matches!(why, LockError::Expired { token: t, .. } if t == token),
            "{why:?}"
        );
        assert!(took >= ms(300) && took < ms(1000), "{took:?}");
        assert!(matches!(
            lock.keep_alive(Duration::ZERO).await,
            LockError::Expired { .. }
        ));
    });
}

/// keep_alive refuses at once a ttl below twice the io_timeout; so does with_lock.
pub fn keep_alive_refuses_a_ttl_its_io_timeout_cannot_renew_in_time<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let lock = locks
            .try_lock("short", "a", ms(300))
            .await
            .unwrap()
            .unwrap();
        let refused = tokio::time::timeout(Duration::from_secs(5), lock.keep_alive(Duration::ZERO))
            .await
            .expect("refused at once, not after the lease");
        let io_timeout = Duration::from_secs(2);
        assert_eq!(
            refused,
            LockError::InvalidTtl {
                ttl: ms(300),
                problem: alkstore_mem::TtlProblem::TooShortToKeepAlive { io_timeout },
            }
        );
        assert!(
            lock.is_held().await.unwrap(),
            "the lease itself is untouched"
        );
        drop(lock);
        let options = alkstore_mem::LockOptions::ttl(ms(300)).keep_alive(Duration::ZERO);
        let ran = alkstore_mem::with_lock(&locks, "short", "b", options, |_| async {}).await;
        assert!(matches!(ran, Err(LockError::InvalidTtl { .. })), "{ran:?}");
    });
}

/// Sixteen tasks on one store (one connection), by `acquire` and by `try_lock` in a loop, on
/// one name: never two holders, and tokens increase in grant order.
pub fn sixteen_tasks_on_one_store_never_overlap_and_tokens_increase_in_order<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let inside = Arc::new(AtomicU32::new(0));
        let last = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        for t in 0..16 {
            let (locks, inside, last) = (locks.clone(), inside.clone(), last.clone());
            tasks.push(tokio::spawn(async move {
                let (owner, ttl) = (format!("t{t}"), Duration::from_secs(10));
                for i in 0..25 {
                    let lock = if (t + i) % 3 == 0 {
                        loop {
                            if let Some(l) = locks.try_lock("hot", &owner, ttl).await.unwrap() {
                                break l;
                            }
                            tokio::task::yield_now().await;
                        }
                    } else {
                        locks.acquire("hot", &owner, ttl).await.unwrap().unwrap()
                    };
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                    let prev = last.swap(lock.token(), Ordering::SeqCst);
                    assert!(lock.token() > prev, "token {} after {prev}", lock.token());
                    tokio::task::yield_now().await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    assert!(lock.release().await.unwrap());
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
}
