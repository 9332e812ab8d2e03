//! What dropped handles and finished operations leave on the server: nothing that the live
//! state does not need, and nothing that outlives it for long. Waiters dropped as their
//! runtime shuts down (or on a thread without one) are withdrawn at once, so the next waiter
//! is served right after a release; release marks expire within a bounded time whatever the
//! `io_timeout`; a burst of operations leaves only the namespace's counters.
//!
//! Runs against the shared test server (`make test-redis`).

mod common;

use std::time::{Duration, Instant};

use alkstore_redis::{RedisAcquire, RedisConfig, RedisLock, RedisLocks};
use common::{eventually, fresh_namespace, live_keys, namespace_keys, runtime, shared_cli, url};
use tokio::runtime::Runtime;

const LONG: Duration = Duration::from_secs(30);

async fn connect_with(ns: &str, config: RedisConfig) -> RedisLocks {
    RedisLocks::connect_with(&url(), config.with_namespace(ns))
        .await
        .expect("the test Redis answers")
}

/// A fresh namespace, a runtime, a store there, and its lease on "q" (`LONG`).
fn held_q() -> (String, Runtime, RedisLocks, RedisLock) {
    let ns = fresh_namespace();
    let rt = runtime();
    let locks = rt.block_on(connect_with(&ns, RedisConfig::new()));
    let holder = rt
        .block_on(locks.try_lock("q", "holder", LONG))
        .unwrap()
        .unwrap();
    (ns, rt, locks, holder)
}

/// The waiters queued for `name` in `ns`.
fn queued(ns: &str, name: &str) -> usize {
    let n = shared_cli(&["ZCARD", &format!("{{{ns}}}:queue:{name}")]);
    n.trim().parse().expect("ZCARD answers a number")
}

/// The waiter entries (`{ns}:waiter:<id>`) of `ns`.
fn waiter_entries(ns: &str) -> usize {
    let prefix = format!("{{{ns}}}:waiter:");
    namespace_keys(ns)
        .iter()
        .filter(|k| k.starts_with(&prefix))
        .count()
}

/// `ns`'s release marks, with their remaining life in ms (`PTTL`: -1 means no expiry).
fn marks(ns: &str) -> Vec<(String, i64)> {
    let prefix = format!("{{{ns}}}:released:");
    namespace_keys(ns)
        .into_iter()
        .filter(|k| k.starts_with(&prefix))
        .map(|k| {
            let pttl = shared_cli(&["PTTL", &k]).trim().parse().expect("a number");
            (k, pttl)
        })
        .collect()
}

/// What an idle namespace needs: the token counter and the queue sequence.
fn counters(ns: &str) -> Vec<String> {
    vec![format!("{{{ns}}}:seq"), format!("{{{ns}}}:token")]
}

/// `holder` holds "q" in `ns`; `live` (a task on `rt`) waits for it. Releases the lease and
/// returns how long `live` took to get it.
fn release_and_time_the_next_waiter(
    rt: &Runtime,
    holder: RedisLock,
    live: tokio::task::JoinHandle<Result<Option<RedisLock>, alkstore_mem::LockError>>,
) -> Duration {
    rt.block_on(async {
        let start = Instant::now();
        assert!(holder.release().await.unwrap());
        let got = tokio::time::timeout(Duration::from_secs(10), live)
            .await
            .expect("the live waiter is served")
            .unwrap()
            .unwrap()
            .expect("an unbounded wait is granted");
        let took = start.elapsed();
        assert_eq!(got.owner(), "live");
        assert!(got.release().await.unwrap());
        took
    })
}

/// Queues "live" for "q" (held by `holder`'s store) on `rt`, behind the one waiter already
/// queued, and waits until it is in line.
fn queue_live(
    rt: &Runtime,
    locks: &RedisLocks,
    ns: &str,
) -> tokio::task::JoinHandle<Result<Option<RedisLock>, alkstore_mem::LockError>> {
    let live = {
        let locks = locks.clone();
        rt.spawn(async move { locks.acquire("q", "live", LONG).await })
    };
    eventually("the live waiter queues behind the doomed one", || {
        queued(ns, "q") == 2
    });
    live
}

#[test]
fn a_waiter_dropped_as_its_runtime_shuts_down_is_withdrawn_and_the_next_waiter_served_at_once() {
    let (ns, rt, locks, holder) = held_q();
    // The doomed waiter: a task on a runtime (and a store) of its own, as in a process whose
    // `#[tokio::main]` returns while the task still waits. The default 1 s heartbeat keeps its
    // entry fresh for up to 3 s unless it is withdrawn.
    let dying = runtime();
    let doomed = dying.block_on(connect_with(&ns, RedisConfig::new()));
    dying.spawn(async move { doomed.acquire("q", "doomed", LONG).await });
    eventually("the doomed waiter queues", || queued(&ns, "q") == 1);
    let live = queue_live(&rt, &locks, &ns);

    let start = Instant::now();
    drop(dying);
    let shutdown = start.elapsed();
    assert_eq!(
        (queued(&ns, "q"), waiter_entries(&ns)),
        (1, 1),
        "the doomed waiter is still in line after its runtime shut down"
    );
    let took = release_and_time_the_next_waiter(&rt, holder, live);
    eprintln!(
        "runtime shutdown withdrew the waiter (shutdown took {shutdown:?}); the next waiter \
         got the lease {took:?} after the release"
    );
    assert!(took < Duration::from_secs(1), "{took:?}: served late");
    rt.block_on(async { tokio::time::sleep(Duration::from_millis(50)).await });
    assert_eq!(live_keys(&ns), counters(&ns));
}

#[test]
fn a_waiter_dropped_on_a_thread_without_a_runtime_is_withdrawn_before_the_drop_returns() {
    let (ns, rt, locks, holder) = held_q();
    let mut doomed: std::pin::Pin<Box<RedisAcquire>> = Box::pin(locks.acquire("q", "doomed", LONG));
    rt.block_on(async {
        let polled = tokio::time::timeout(Duration::from_millis(100), &mut doomed).await;
        assert!(polled.is_err(), "the name is held: the waiter waits");
    });
    eventually("the doomed waiter queues", || queued(&ns, "q") == 1);
    let live = queue_live(&rt, &locks, &ns);

    let start = Instant::now();
    std::thread::spawn(move || drop(doomed)).join().unwrap();
    let dropped = start.elapsed();
    assert_eq!(
        (queued(&ns, "q"), waiter_entries(&ns)),
        (1, 1),
        "the waiter dropped without a runtime is still in line"
    );
    let took = release_and_time_the_next_waiter(&rt, holder, live);
    eprintln!(
        "a drop without a runtime withdrew the waiter (the drop took {dropped:?}); the next \
         waiter got the lease {took:?} after the release"
    );
    assert!(took < Duration::from_secs(1), "{took:?}: served late");
}

#[test]
fn release_marks_expire_within_a_bounded_time_even_with_the_largest_io_timeout() {
    let ns = fresh_namespace();
    let config = RedisConfig::new().with_io_timeout(Duration::MAX);
    assert_eq!(config.io_timeout(), RedisConfig::MAX_IO_TIMEOUT);
    let bound_ms = i64::try_from(2 * RedisConfig::MAX_IO_TIMEOUT.as_millis()).unwrap();
    let rt = runtime();
    rt.block_on(async {
        let locks = connect_with(&ns, config).await;
        for i in 0..20 {
            let lock = locks
                .try_lock(&format!("m{i}"), "a", LONG)
                .await
                .unwrap()
                .unwrap();
            assert!(lock.release().await.unwrap());
        }
    });
    let marks = marks(&ns);
    assert_eq!(marks.len(), 20, "one mark per release: {marks:?}");
    for (key, pttl) in &marks {
        assert!(
            (1..=bound_ms).contains(pttl),
            "{key} expires in {pttl} ms, not within {bound_ms} ms"
        );
    }
    eprintln!(
        "largest io_timeout ({:?}): 20 marks, longest life {} ms (bound {bound_ms} ms)",
        RedisConfig::MAX_IO_TIMEOUT,
        marks.iter().map(|(_, p)| *p).max().unwrap()
    );
    // Nothing else is left: the marks are all that outlives the releases, and they expire.
    assert_eq!(live_keys(&ns), vec![format!("{{{ns}}}:token")]);
    let mut del = vec!["DEL"];
    del.extend(marks.iter().map(|(k, _)| k.as_str()));
    shared_cli(&del);
}

/// Locks and waiters of every kind, dropped and finished, on names "b0".."b7".
async fn burst(locks: &RedisLocks) {
    // Held, renewed and released; held and dropped (released by the drop).
    for i in 0..40 {
        let name = format!("b{}", i % 8);
        if let Some(mut lock) = locks.try_lock(&name, "a", LONG).await.unwrap() {
            lock.renew(LONG).await.unwrap();
            if i % 2 == 0 {
                assert!(lock.release().await.unwrap());
            } else {
                drop(lock);
            }
        }
    }
    // Waiters behind a holder: bounded waits that elapse, waiters dropped mid-wait, a
    // waiter that is served.
    let holder = locks.try_lock("b0", "h", LONG).await.unwrap().unwrap();
    let mut waits = Vec::new();
    for i in 0..10 {
        let wait = Duration::from_millis(50 + 10 * i);
        waits.push(locks.acquire("b0", &format!("w{i}"), LONG).timeout(wait));
    }
    for waited in futures_join(waits).await {
        assert!(waited.unwrap().is_none());
    }
    for i in 0..10 {
        let mut waiter = Box::pin(locks.acquire("b0", &format!("d{i}"), LONG));
        let _ = tokio::time::timeout(Duration::from_millis(20), &mut waiter).await;
    }
    let served = {
        let locks = locks.clone();
        tokio::spawn(async move { locks.acquire("b0", "served", LONG).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(holder.release().await.unwrap());
    let served = served.await.unwrap().unwrap().unwrap();
    assert!(served.release().await.unwrap());
}

/// Runs the futures concurrently and returns their outputs in order.
async fn futures_join<F>(futures: Vec<F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut outputs = Vec::new();
    for handle in handles {
        outputs.push(handle.await.unwrap());
    }
    outputs
}

#[test]
fn after_a_burst_of_operations_the_namespace_holds_only_what_its_live_state_needs() {
    let ns = fresh_namespace();
    // Short io_timeout: marks live their minimum, 1 s.
    let config = RedisConfig::new()
        .with_io_timeout(Duration::from_millis(300))
        .with_waiter_heartbeat(Duration::from_millis(100));
    let rt = runtime();
    let locks = rt.block_on(connect_with(&ns, config.clone()));
    rt.block_on(burst(&locks));
    // A lock and a waiter dropped as their runtime shuts down.
    let dying = runtime();
    dying.block_on(async {
        let doomed = connect_with(&ns, config).await;
        let lock = doomed.try_lock("c", "a", LONG).await.unwrap().unwrap();
        tokio::spawn(async move {
            let _held = lock;
            std::future::pending::<()>().await;
        });
        let waiting = doomed.clone();
        tokio::spawn(async move { waiting.acquire("c", "w", LONG).await });
    });
    eventually("the doomed waiter queues", || queued(&ns, "c") == 1);
    drop(dying);

    // Right away (the spawned releases and withdrawals have run within a few ms): nothing
    // held, nobody waiting, so only the counters and the fresh release marks.
    eventually("only the counters and the marks are left", || {
        live_keys(&ns) == counters(&ns)
    });
    // (On a loaded machine some marks may be gone already: each lives one second.)
    let marks = marks(&ns);
    for (key, pttl) in &marks {
        // 0 or -2: it expires or expired between the listing and the PTTL (a loaded machine); -1 (no expiry)
        // or more than its second would be the defect.
        assert!(
            (0..=1000).contains(pttl) || *pttl == -2,
            "{key} expires in {pttl} ms"
        );
    }
    eprintln!(
        "after the burst: {} release marks, each gone within 1 s",
        marks.len()
    );
    rt.block_on(async { tokio::time::sleep(Duration::from_millis(1100)).await });
    assert_eq!(namespace_keys(&ns), counters(&ns));
}
