//! Issue-13 review: races on one name, started together with `join!` and repeated. A
//! release handing the lease to the head waiter vs a try_lock and vs a force_release.

mod common;
mod r13;

use std::time::Duration;

use r13::{TTL, ms};

/// Another store (its own connections, as another process) on `locks`' schema.
async fn same_schema(locks: &alkstore_pg::PgLocks) -> alkstore_pg::PgLocks {
    let config = alkstore_pg::PgConfig::new().with_schema(locks.config().schema());
    alkstore_pg::PgLocks::connect_with(&common::url(), config)
        .await
        .unwrap()
}

/// Until the snapshot lists `n` waiters.
async fn wait_queued(locks: &alkstore_pg::PgLocks, n: usize) {
    for _ in 0..200 {
        if locks.snapshot().await.unwrap().waiting.len() == n {
            return;
        }
        tokio::time::sleep(ms(5)).await;
    }
    panic!("not queued");
}

/// release (hand-off to the queued waiter) racing a try_lock: the try_lock must get None
/// whichever runs first (a waiter is queued), and the waiter gets a larger token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_racing_a_try_lock_never_lets_the_try_lock_barge() {
    let locks = common::store().await;
    let rival = same_schema(&locks).await;
    for round in 0..30 {
        let name = format!("r{round}");
        let held = locks.try_lock(&name, "h", TTL).await.unwrap().unwrap();
        let waiter = {
            let (locks, name) = (locks.clone(), name.clone());
            tokio::spawn(async move { locks.acquire(&name, "w", TTL).await })
        };
        wait_queued(&locks, 1).await;
        let (released, barged) = tokio::join!(held.release(), rival.try_lock(&name, "x", TTL));
        assert!(released.unwrap());
        assert!(
            barged.unwrap().is_none(),
            "round {round}: a try_lock barged"
        );
        let got = tokio::time::timeout(Duration::from_secs(3), waiter)
            .await
            .unwrap()
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(got.owner(), "w");
    }
}

/// release (hand-off to W1, W2 behind it) racing a force_release: whoever ran first, at
/// most one live lease, W1 before W2, tokens increasing, and every lease the force_release
/// reports as ended is no longer held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_racing_a_force_release_hands_the_name_on_once() {
    let locks = common::store().await;
    let operator = same_schema(&locks).await;
    for round in 0..20 {
        let name = format!("f{round}");
        let held = locks.try_lock(&name, "h", TTL).await.unwrap().unwrap();
        let h_token = held.token();
        let mut waiters = Vec::new();
        for w in ["w1", "w2"] {
            let (store, name) = (locks.clone(), name.clone());
            waiters.push(tokio::spawn(async move {
                let lock = store.acquire(&name, w, TTL).await.unwrap().unwrap();
                let token = lock.token();
                tokio::time::sleep(ms(20)).await;
                let live = lock.release().await.unwrap();
                (w, token, live)
            }));
            wait_queued(&locks, waiters.len()).await;
        }
        let (released, ended) = tokio::join!(held.release(), operator.force_release(&name));
        let (released, ended) = (released.unwrap(), ended.unwrap());
        assert!(released || ended.as_ref().is_some_and(|e| e.token() == h_token));
        let mut results = Vec::new();
        for w in waiters {
            results.push(
                tokio::time::timeout(Duration::from_secs(5), w)
                    .await
                    .unwrap()
                    .unwrap(),
            );
        }
        assert_eq!((results[0].0, results[1].0), ("w1", "w2"));
        assert!(
            h_token < results[0].1 && results[0].1 < results[1].1,
            "{results:?}"
        );
        if let Some(e) = &ended {
            assert!(e.token() == h_token || e.owner() == "w1", "ended {e:?}");
        }
        assert!(
            results[1].2,
            "w2's lease was live until its release: {results:?}"
        );
    }
}
