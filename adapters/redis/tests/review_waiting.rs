//! Hostile review of the Redis engine's waiting, on the shared server (`make test-redis`):
//! hand-offs that lapsed, dropped waiters, a head waiter whose wait ends. What it leaves in
//! Redis is checked key by key.

mod common;

use std::time::{Duration, Instant};

use alkstore_mem::LockError;
use alkstore_redis::{RedisConfig, RedisLock, RedisLocks};
use common::{fresh_namespace, live_keys, namespace_keys, runtime, shared_cli, store_in, url};

/// A fresh namespace, a runtime, a store there, and its lease on "stale" (10 s).
fn held_stale() -> (String, tokio::runtime::Runtime, RedisLocks, RedisLock) {
    let ns = fresh_namespace();
    let rt = runtime();
    let holder_store = rt.block_on(store_in(ns.clone()));
    let holder = rt
        .block_on(holder_store.try_lock("stale", "holder", Duration::from_secs(10)))
        .unwrap()
        .unwrap();
    (ns, rt, holder_store, holder)
}

/// Waiter "A" on "stale" (ttl 200 ms, `wait` if bounded) in namespace `ns`, on a
/// current-thread runtime of its own thread, which stalls for 1.5 s 300 ms after it queued.
fn stalled_waiter(
    ns: &str,
    wait: Option<Duration>,
) -> std::thread::JoinHandle<Result<Option<RedisLock>, LockError>> {
    let ns = ns.to_owned();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let store = store_in(ns).await;
            let task = tokio::spawn(async move {
                let acquire = store.acquire("stale", "A", Duration::from_millis(200));
                match wait {
                    Some(wait) => acquire.timeout(wait).await,
                    None => acquire.await,
                }
            });
            tokio::time::sleep(Duration::from_millis(300)).await;
            std::thread::sleep(Duration::from_millis(1500)); // the runtime stalls
            task.await.unwrap()
        })
    })
}

// ---------------------------------------------------------------------------------------------
// 2. A handed-off lease that lapsed (and was re-granted) before its waiter picked it up.
// ---------------------------------------------------------------------------------------------

#[test]
fn acquire_never_returns_a_handed_lease_that_already_lapsed_and_was_granted_to_another() {
    let (ns, rt, holder_store, holder) = held_stale();
    // Waiter A lives on a current-thread runtime of its own thread, which then stalls for
    // 1.5 s (a GC pause, a blocking call on the runtime, a busy executor).
    let waiter = stalled_waiter(&ns, None);
    rt.block_on(async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        // A is queued; the release hands it the lease for 200 ms.
        assert!(holder.release().await.unwrap());
        tokio::time::sleep(Duration::from_millis(500)).await;
        // A never picked it up, and its 200 ms are over: B takes the name.
        let b = holder_store
            .try_lock("stale", "B", Duration::from_secs(10))
            .await
            .unwrap()
            .expect("the hand-off to A lapsed, so the name is free");
        // B gives the name up once A's runtime runs again (~1.8 s): A, back at the head of the
        // queue, is handed a new lease then. (Held until the join, B would keep A waiting for
        // its whole 10 s.)
        let b_token = b.token();
        let releaser = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1300)).await;
            b.release().await.unwrap()
        });
        let got = waiter.join().unwrap().unwrap();
        assert!(releaser.await.unwrap(), "B held the name until its release");
        let a = got.expect("A waits without bound, so it gets the name after B");
        eprintln!(
            "stale hand-off: A got token {} (deadline {:?}) after B's token {b_token}",
            a.token(),
            a.deadline(),
        );
        // A stale pickup would return the lapsed hand-off's token, older than B's.
        assert!(
            a.token() > b_token,
            "acquire resolved to Ok(Some(lock)) for A with the lapsed hand-off (token {}) \
             although B was granted the name after it (token {b_token}): two handles \
             believed they held it",
            a.token()
        );
        drop(a);
    });
}

#[test]
fn a_bounded_waiter_whose_hand_off_lapsed_resolves_to_none_and_leaves_no_entry() {
    let (ns, rt, holder_store, holder) = held_stale();
    // As above, but A's wait is bounded to 1 s: when its runtime runs again (~1.8 s) the
    // hand-off has lapsed and so has its wait.
    let waiter = stalled_waiter(&ns, Some(Duration::from_secs(1)));
    rt.block_on(async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(holder.release().await.unwrap());
        tokio::time::sleep(Duration::from_millis(500)).await;
        let b = holder_store
            .try_lock("stale", "B", Duration::from_secs(10))
            .await
            .unwrap()
            .expect("the hand-off to A lapsed, so the name is free");
        let got = waiter.join().unwrap().unwrap();
        assert!(got.is_none(), "A got {got:?}: a lapsed hand-off");
        assert_eq!(
            holder_store.holder("stale").await.unwrap().unwrap().token(),
            b.token()
        );
        assert!(b.release().await.unwrap());
        let left = live_keys(&ns);
        assert_eq!(
            left,
            vec![format!("{{{ns}}}:seq"), format!("{{{ns}}}:token")],
            "the stale waiter entry (or the queue) was left behind"
        );
    });
}

// ---------------------------------------------------------------------------------------------
// 6. Cancel-safety: waiters dropped at every point leave no entry and no stranded lease.
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_waiters_leave_no_keys_and_no_stranded_lease() {
    let ns = fresh_namespace();
    let locks = store_in(ns.clone()).await;
    for round in 0..40u64 {
        // Cancels of the last round run in spawned tasks: wait for them (bounded).
        let holder = locks
            .acquire("c", "h", Duration::from_secs(10))
            .timeout(Duration::from_secs(2))
            .await
            .unwrap()
            .unwrap_or_else(|| {
                let dump = shared_cli(&["HGETALL", &format!("{{{ns}}}:lock:c")]);
                let q = shared_cli(&["ZRANGE", &format!("{{{ns}}}:queue:c"), "0", "-1"]);
                let k = namespace_keys(&ns);
                panic!(
                    "round {round}: the name stayed taken for 2 s: {dump:?} queue {q:?} keys {k:?}"
                )
            });
        let mut waiters = Vec::new();
        for w in 0..4 {
            let locks = locks.clone();
            waiters.push(tokio::spawn(async move {
                let got = locks
                    .acquire("c", &format!("w{w}"), Duration::from_secs(10))
                    .await;
                // Release at once inside the task (a lease returned after the abort was
                // requested is released here, not stranded).
                match got {
                    Ok(Some(lock)) => {
                        let (token, owner) = (lock.token(), lock.owner().to_owned());
                        let released = lock.release().await.unwrap();
                        assert!(released, "acquire gave {owner} token {token}, not held");
                        Ok(true)
                    }
                    Ok(None) => Ok(false),
                    Err(e) => Err(e),
                }
            }));
        }
        // Drop them (abort) at staggered points, some around the release.
        tokio::time::sleep(Duration::from_micros(round * 97 % 3000)).await;
        let release = {
            let locks = locks.clone();
            let _ = locks;
            tokio::spawn(holder.release())
        };
        for (i, w) in waiters.iter().enumerate() {
            if (round as usize + i) % 5 != 0 {
                tokio::time::sleep(Duration::from_micros(300 * i as u64)).await;
                w.abort();
            }
        }
        assert!(release.await.unwrap().unwrap());
        for w in waiters {
            match w.await {
                Ok(r) => {
                    r.unwrap();
                }
                Err(e) => assert!(e.is_cancelled(), "{e:?}"),
            }
        }
    }
    // Spawned cancels and drop-releases run: give them a moment.
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The name must be free at once (no lease stranded on a dropped waiter).
    let free = locks
        .try_lock("c", "end", Duration::from_secs(1))
        .await
        .unwrap();
    assert!(free.is_some(), "a lease was stranded on a dropped waiter");
    free.unwrap().release().await.unwrap();
    let left = live_keys(&ns);
    eprintln!("keys left: {left:?}");
    let expected: Vec<String> = vec![format!("{{{ns}}}:seq"), format!("{{{ns}}}:token")];
    assert_eq!(left, expected, "keys leak");
}

#[test]
fn a_waiter_dropped_outside_a_runtime_does_not_strand_the_lease_past_its_heartbeat() {
    let ns = fresh_namespace();
    let rt = runtime();
    let config = RedisConfig::new()
        .with_namespace(&ns)
        .with_waiter_heartbeat(Duration::from_millis(100));
    let locks = rt
        .block_on(RedisLocks::connect_with(&url(), config))
        .unwrap();
    let holder = rt
        .block_on(locks.try_lock("o", "h", Duration::from_secs(10)))
        .unwrap()
        .unwrap();
    let mut waiting = Box::pin(locks.acquire("o", "w", Duration::from_secs(10)));
    rt.block_on(async {
        let _ = tokio::time::timeout(Duration::from_millis(200), &mut waiting).await;
    });
    // Dropped on a thread with no runtime: no panic; the withdrawal runs on a helper thread
    // (see leftovers.rs for the queue checked right after the drop).
    std::thread::spawn(move || drop(waiting)).join().unwrap();
    rt.block_on(async {
        assert!(holder.release().await.unwrap());
        tokio::time::sleep(Duration::from_millis(500)).await;
        let got = locks
            .try_lock("o", "x", Duration::from_secs(1))
            .await
            .unwrap();
        assert!(
            got.is_some(),
            "the lease handed to the dropped waiter is stranded"
        );
    });
}

// ---------------------------------------------------------------------------------------------
// 12. A head waiter whose bounded wait ends tells the waiter behind it that it is first now.
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_waiter_learns_it_is_first_when_the_head_waiters_wait_ends() {
    let ns = fresh_namespace();
    let locks = store_in(ns.clone()).await;
    // B re-checks on its own only every 5 s (its heartbeat).
    let slow = RedisLocks::connect_with(
        &url(),
        RedisConfig::new()
            .with_namespace(&ns)
            .with_waiter_heartbeat(Duration::from_secs(5)),
    )
    .await
    .unwrap();
    let start = Instant::now();
    // A lease that lapses at 600 ms with nobody to release it.
    locks
        .try_lock("next", "h", Duration::from_millis(600))
        .await
        .unwrap()
        .unwrap()
        .detach();
    // A (first) gives up at 200 ms; B waits behind it without bound.
    let a = {
        let locks = locks.clone();
        tokio::spawn(async move {
            locks
                .acquire("next", "A", Duration::from_secs(5))
                .timeout(Duration::from_millis(200))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let b = tokio::spawn(async move { slow.acquire("next", "B", Duration::from_secs(5)).await });
    assert!(a.await.unwrap().unwrap().is_none());
    let got = b.await.unwrap().unwrap().unwrap();
    let took = start.elapsed();
    eprintln!("the next waiter got the lapsed lease after {took:?}");
    assert_eq!(got.owner(), "B");
    assert!(
        took < Duration::from_millis(2000),
        "B waited {took:?}: it slept a whole heartbeat instead of to the holder's deadline"
    );
    assert!(got.release().await.unwrap());
}
