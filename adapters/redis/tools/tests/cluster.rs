//! Redis Cluster (`redis+cluster://`): 3 masters and 3 replicas of the test's own on
//! 127.0.0.1 (base port 6460, shifted by `ALKSTORE_TEST_PORT_OFFSET`; scratch dirs, killed by
//! pid). The namespace's slot is moved to another master by hand while a lease is held and a
//! waiter waits, with calls made while it is half moved (which must never grant the held
//! name); then the slot's master is killed and its replica takes over. Leases, waiters
//! (woken by pub/sub: their heartbeat is 20 s) and token order survive both.

mod common;

use std::time::Duration;

use alkstore_kit_harness::support;
use alkstore_redis::alkstore_mem::LockError;
use alkstore_redis::{Redis, RedisConfig, RedisLocks};
use alkstore_redis_tools::cluster::ClusterSet;
use alkstore_redis_tools::server::{cli, wait_for};
use common::{TTL, config, hand_off, queued_waiter};

#[test]
fn a_cluster_keeps_leases_and_waiters_across_a_slot_move_and_a_master_killed() {
    let mut set = ClusterSet::start(6460);
    let url = set.url();
    support::runtime().block_on(async {
        let ns = support::fresh_scope();
        let slot = set.slot(&format!("{{{ns}}}:"));
        let locks = RedisLocks::connect_with(&url, config(&ns)).await.unwrap();
        // The same engine through Redis::connect_cluster, from one seed node.
        let seed = [format!("redis://127.0.0.1:{}/", set.ports()[0])];
        let other =
            RedisLocks::from_engine(Redis::connect_cluster(&seed, config(&ns)).await.unwrap());

        // --- The slot moves while "a" is held and a waiter waits.
        let mut held = locks.try_lock("a", "holder", TTL).await.unwrap().unwrap();
        let waiter = queued_waiter(&locks, &ns, "a", |q| set.owner(set.slot(q)).port).await;
        let from = set.owner(slot);
        let to = set.masters().into_iter().find(|m| m.id != from.id).unwrap();
        tokio::task::block_in_place(|| {
            set.begin_move(slot, &from, &to);
            // The queue moves first; the lease stays behind for now.
            set.migrate(&from, &to, &[format!("{{{ns}}}:queue:a")]);
        });
        // Half moved: a script must not run on either side (TRYAGAIN until the move ends,
        // or Unavailable), and above all must not grant the held name.
        let intruder = tokio::spawn({
            let other = other.clone();
            async move { other.try_lock("a", "intruder", TTL).await }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        tokio::task::block_in_place(|| set.end_move(slot, &from, &to));
        match intruder.await.unwrap() {
            Ok(None) | Err(LockError::Unavailable { .. }) => {}
            Ok(Some(lock)) => panic!("granted a held name while its slot moved: {lock:?}"),
            Err(e) => panic!("unexpected: {e}"),
        }
        assert_eq!(set.owner(slot).id, to.id);
        assert!(set.keys_in(from.port, slot).is_empty());
        // On the new owner: the lease is there, renews, and hands off to the waiter.
        let holder = other.holder("a").await.unwrap().expect("still held");
        assert_eq!((holder.owner(), holder.token()), ("holder", held.token()));
        held.renew(TTL).await.unwrap();
        let token = hand_off(held, waiter).await;
        let snapshot = locks.snapshot().await.unwrap();
        assert!(snapshot.held.is_empty() && snapshot.waiting.is_empty());

        // --- The slot's master is killed; its replica takes over.
        let held = locks.try_lock("b", "holder", TTL).await.unwrap().unwrap();
        assert!(held.token() > token);
        let waiter = queued_waiter(&locks, &ns, "b", |q| set.owner(set.slot(q)).port).await;
        let master = set.owner(slot);
        let replica = set.replica_of(&master.id);
        // Replication is asynchronous: wait until the replica has all the master wrote.
        let offset = |port: u16, field: &str| -> u64 {
            cli(port, &["INFO", "replication"])
                .lines()
                .find_map(|l| l.strip_prefix(field)?.trim().parse().ok())
                .unwrap_or(0)
        };
        let written = offset(master.port, "master_repl_offset:");
        tokio::task::block_in_place(|| {
            wait_for("replicated", Duration::from_secs(10), || {
                offset(replica.port, "slave_repl_offset:") >= written
            })
        });
        tokio::task::block_in_place(|| set.kill(master.port));
        assert_eq!(set.owner(slot).id, replica.id, "the replica took over");
        let holder = locks.holder("b").await.unwrap().expect("still held");
        assert_eq!(holder.token(), held.token());
        let token = hand_off(held, waiter).await;
        let again = other.try_lock("c", "x", TTL).await.unwrap().unwrap();
        assert!(again.token() > token);
        let listed = locks.snapshot().await.unwrap();
        assert_eq!(listed.held.len(), 1);
        assert!(again.release().await.unwrap());
    });
}

#[test]
fn cluster_urls_that_lead_nowhere_are_unavailable() {
    support::runtime().block_on(async {
        let port = support::port(6468);
        assert!(!support::listens(port));
        let url = format!("redis+cluster://127.0.0.1:{port}");
        let config = RedisConfig::new().with_io_timeout(Duration::from_millis(300));
        let error = RedisLocks::connect_with(&url, config).await.unwrap_err();
        assert!(matches!(error, LockError::Unavailable { .. }), "{error}");
        let bad = RedisLocks::connect("redis+cluster://127.0.0.1:1/0").await;
        assert!(bad.unwrap_err().to_string().contains("no db"));
        let none: [&str; 0] = [];
        let empty = Redis::connect_cluster(&none, RedisConfig::new()).await;
        assert!(empty.unwrap_err().to_string().contains("at least one seed"));
    });
}
