//! The contract on a real Redis (the shared test server of `make test-redis`): the shared
//! suite of `alkstore-kit-harness` (exclusion, busy is `None`, renew and release rules,
//! tokens, FIFO hand-off, validation identical to the core's, time on the server's clock),
//! then what only Redis has: namespaces, and `SCAN` patterns in snapshots.

mod common;

use std::time::Duration;

use alkstore_redis::{RedisConfig, RedisLocks};
use common::store;

const TTL: Duration = Duration::from_secs(30);

alkstore_kit_harness::contract_tests!(common::Fixture);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_are_checked_and_shown() {
    let a = store().await;
    assert!(format!("{a:?}").contains("namespace"));
    for bad in ["a{b}", "", "x}"] {
        let refused =
            RedisLocks::connect_with(&common::url(), RedisConfig::new().with_namespace(bad)).await;
        assert!(refused.is_err(), "{bad:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_see_only_their_own_namespace_even_with_glob_characters_in_it() {
    let base = common::fresh_namespace();
    let open = |ns: String| common::store_in(ns);
    let star = open(format!("{base}*")).await;
    let plain = open(format!("{base}x")).await;
    let bracket = open(format!("{base}[x]")).await;
    let _a = star.try_lock("a", "star", TTL).await.unwrap().unwrap();
    let _b = plain.try_lock("b", "plain", TTL).await.unwrap().unwrap();
    let _c = bracket
        .try_lock("c", "bracket", TTL)
        .await
        .unwrap()
        .unwrap();
    for (store, name) in [(&star, "a"), (&plain, "b"), (&bracket, "c")] {
        let held = store.snapshot().await.unwrap().held;
        let names: Vec<&str> = held.iter().map(|l| l.name()).collect();
        assert_eq!(names, [name]);
    }
    // Hostile names round-trip through SCAN and the script.
    let weird = ["*", "a\\b", "[x]", "100%", "ü/ñ", "q?"];
    let mut held = Vec::new();
    for name in weird {
        held.push(plain.try_lock(name, "o", TTL).await.unwrap().unwrap());
    }
    let mut names: Vec<String> = (plain.snapshot().await.unwrap().held.iter())
        .map(|l| l.name().to_owned())
        .collect();
    let mut expected: Vec<String> = weird.iter().map(|n| n.to_string()).collect();
    expected.push("b".into());
    expected.sort();
    names.sort();
    assert_eq!(names, expected);
}

/// The engine's public names are the kit's types (what the shared suite's
/// `every_future_is_a_named_send_type` checks, by their Redis names).
#[test]
fn every_public_name_is_the_kits_type() {
    use alkstore_kit::{Acquire, KeepAliveFuture, LapsedFuture, Lock, Locks, RemoteFuture};
    use alkstore_redis::{
        Redis, RedisAcquire, RedisFuture, RedisKeepAlive, RedisLapsed, RedisLock,
    };
    let _: fn(RedisLocks) -> Locks<Redis> = |x| x;
    let _: fn(RedisLock) -> Lock<Redis> = |x| x;
    let _: fn(RedisAcquire) -> Acquire<Redis> = |x| x;
    let _: fn(RedisFuture<'static, bool>) -> RemoteFuture<'static, bool> = |x| x;
    let _: fn(RedisKeepAlive<'static>) -> KeepAliveFuture<'static> = |x| x;
    let _: fn(RedisLapsed<'static>) -> LapsedFuture<'static> = |x| x;
}
