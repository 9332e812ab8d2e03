//! `redis+sentinel://`: a master, a replica and three sentinels of the test's own on
//! 127.0.0.1 (base port 6450, shifted by `ALKSTORE_TEST_PORT_OFFSET`; scratch dirs, killed
//! by pid). Failed over twice, by `SENTINEL FAILOVER` and by SIGKILL of the master: a lease
//! held across the failover is still held on the new master, renews and releases there; a
//! waiter queued before the failover is handed the lease by pub/sub on the new master (its
//! heartbeat is 20 s, so nothing else could wake it in time); tokens go on increasing; the
//! same store, connected before, works after.

mod common;

use std::time::Duration;

use alkstore_kit_harness::support;
use alkstore_redis::alkstore_mem::LockError;
use alkstore_redis::{RedisConfig, RedisLock, RedisLocks};
use alkstore_redis_tools::sentinels::SentinelSet;
use alkstore_redis_tools::server::{cli, wait_for};
use common::{TTL, config, hand_off, queue_key, queued_waiter};

/// Waits until `key` is on the replica (replication is asynchronous: a lease must be there
/// before the failover for the new master to have it).
fn on_replica(set: &SentinelSet, keys: &[String]) {
    let master = set.master_port();
    let replica = [support::port(6450), support::port(6451)]
        .into_iter()
        .find(|p| *p != master)
        .unwrap();
    for key in keys {
        wait_for(
            &format!("{key} replicated"),
            Duration::from_secs(10),
            || cli(replica, &["EXISTS", key]).trim() == "1",
        );
    }
}

/// Holds `name`, queues a waiter behind it, fails over with `failover`, then checks the
/// lease, the waiter's hand-off and the tokens on the new master.
async fn across_a_failover(
    set: &mut SentinelSet,
    locks: &RedisLocks,
    ns: &str,
    name: &str,
    failover: fn(&mut SentinelSet) -> (u16, Duration),
    last_token: u64,
) -> u64 {
    let mut held: RedisLock = locks.try_lock(name, "holder", TTL).await.unwrap().unwrap();
    assert!(held.token() > last_token, "tokens increase");
    let waiter = queued_waiter(locks, ns, name, |_| set.master_port()).await;
    on_replica(set, &[format!("{{{ns}}}:lock:{name}"), queue_key(ns, name)]);

    let (new_master, took) = tokio::task::block_in_place(|| failover(set));
    eprintln!("{name}: the sentinels named 127.0.0.1:{new_master} after {took:?}");

    // The lease came across: the new master has it, renews it, and says who holds it.
    let holder = locks.holder(name).await.unwrap().expect("still held");
    assert_eq!((holder.owner(), holder.token()), ("holder", held.token()));
    held.renew(TTL).await.unwrap();
    assert!(held.is_held().await.unwrap());
    let lock_key = format!("{{{ns}}}:lock:{name}");
    assert_eq!(cli(new_master, &["EXISTS", &lock_key]).trim(), "1");

    // The listener subscribed on the new master.
    let channel = format!("{{{ns}}}:wake");
    wait_for(
        "the wake-up listener is subscribed on the new master",
        Duration::from_secs(20),
        || {
            let out = cli(new_master, &["PUBSUB", "NUMSUB", &channel]);
            out.lines().nth(1).is_some_and(|n| n.trim() != "0")
        },
    );

    // The release hands the lease to the waiter, woken by pub/sub well before its heartbeat.
    let token = hand_off(held, waiter).await;

    // A new grant on the new master: a larger token still.
    let again = locks.try_lock(name, "again", TTL).await.unwrap().unwrap();
    assert!(again.token() > token);
    let token = again.token();
    assert!(again.release().await.unwrap());
    token
}

#[test]
fn sentinel_failovers_keep_leases_waiters_and_token_order() {
    let mut set = SentinelSet::start(6450);
    let url = set.url();
    support::runtime().block_on(async {
        let ns = support::fresh_scope();
        let locks = RedisLocks::connect_with(&url, config(&ns)).await.unwrap();
        let first = set.master_port();
        let token = across_a_failover(
            &mut set,
            &locks,
            &ns,
            "by-command",
            SentinelSet::failover_by_command,
            0,
        )
        .await;
        assert_ne!(set.master_port(), first);
        let token = across_a_failover(
            &mut set,
            &locks,
            &ns,
            "by-kill",
            SentinelSet::failover_by_kill,
            token,
        )
        .await;
        assert_eq!(set.master_port(), first, "failed back to the first server");

        // A store connected now finds the current master too, and sees the same locks.
        let other = RedisLocks::connect_with(&url, config(&ns)).await.unwrap();
        let lock = other.try_lock("later", "x", TTL).await.unwrap().unwrap();
        assert!(lock.token() > token);
        assert_eq!(
            locks.holder("later").await.unwrap().map(|l| l.token()),
            Some(lock.token())
        );
        frozen_first_sentinel(&set, &url, &ns).await;
    });
}

/// With the first sentinel of the URL frozen (SIGSTOP), a store with a 1 s `io_timeout`
/// answers every call: the once-a-second recheck of the sentinels runs behind the calls
/// (before, one call in two seconds waited on the frozen sentinel and failed as "redis did
/// not answer within 1s"), and a new store connects through the next sentinel.
async fn frozen_first_sentinel(set: &SentinelSet, url: &str, ns: &str) {
    let quick = RedisConfig::new()
        .with_namespace(ns)
        .with_io_timeout(Duration::from_secs(1));
    let store = RedisLocks::connect_with(url, quick.clone()).await.unwrap();
    set.sentinel(0).freeze(true);
    let started = std::time::Instant::now();
    let mut calls = 0;
    // Three rechecks' worth (RECHECK is 1 s), each of which used to stall a call.
    while started.elapsed() < Duration::from_millis(3500) {
        let lock = store.try_lock("frozen", "x", TTL).await;
        let lock = lock
            .unwrap_or_else(|e| panic!("call {calls}: {e}"))
            .unwrap();
        assert!(lock.release().await.unwrap(), "call {calls}");
        calls += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let late = RedisLocks::connect_with(url, quick.clone()).await.unwrap();
    assert!(late.try_lock("frozen", "y", TTL).await.unwrap().is_some());
    // A master the (live) sentinel does not know: the message says what the sentinel said.
    let live = set.sentinel(1).port();
    let unknown = format!("redis+sentinel://127.0.0.1:{live}/nosuch");
    let message = RedisLocks::connect_with(&unknown, quick)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("names no master \"nosuch\" that is up"),
        "{message}"
    );
    set.sentinel(0).freeze(false);
    assert!(calls > 20, "{calls} calls");
}

#[test]
fn sentinel_urls_that_lead_nowhere_are_unavailable() {
    support::runtime().block_on(async {
        // Nothing listens there (a port of this suite's range no topology uses).
        let port = support::port(6469);
        assert!(!support::listens(port));
        let url = format!("redis+sentinel://127.0.0.1:{port}/alkmaster");
        let config = RedisConfig::new().with_io_timeout(Duration::from_millis(300));
        let error = RedisLocks::connect_with(&url, config).await.unwrap_err();
        assert!(matches!(error, LockError::Unavailable { .. }), "{error}");
        assert!(error.to_string().contains("redis+sentinel://127.0.0.1"));
        let bad = RedisLocks::connect("redis+sentinel://127.0.0.1:1").await;
        let message = bad.unwrap_err().to_string();
        assert!(message.contains("master's name is missing"), "{message}");
        let tls = RedisConfig::new().with_tls_root_ca("-----BEGIN CERTIFICATE-----");
        let message = RedisLocks::connect_with(&url, tls)
            .await
            .unwrap_err()
            .to_string();
        assert!(message.contains("no TLS"), "{message}");
    });
}
