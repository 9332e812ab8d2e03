//! `RedisConfig::with_replica_ack`: a master on 6441 and its replica on 6442
//! (`--replicaof`), servers of the test's own (scratch dirs, no persistence, killed by pid
//! when dropped). A grant or renewal is acknowledged by the replica before the caller holds
//! it; with the replica frozen (SIGSTOP) or too few replicas, the call is `Unavailable` and
//! the grant is withdrawn on the master.

use std::time::{Duration, Instant};

mod common;

use alkstore_kit_harness::support;
use alkstore_redis::alkstore_mem::LockError;
use alkstore_redis::{RedisConfig, RedisLocks};
use common::RedisServer;

/// How many leases of namespace `ns` `node` has.
fn lease_keys(node: &RedisServer, ns: &str) -> usize {
    let pattern = format!("{{{ns}}}:lock:*");
    node.cli(&["--scan", "--pattern", &pattern])
        .lines()
        .filter(|l| !l.is_empty())
        .count()
}

/// A master and one replica in sync.
fn pair(master_port: u16, replica_port: u16) -> (RedisServer, RedisServer) {
    // No 5 s wait before a diskless sync (Redis 7's default): the replica is in sync at once.
    let master = RedisServer::start_with(master_port, &["--repl-diskless-sync-delay", "0"]);
    let replica = RedisServer::start_with(
        replica_port,
        &["--replicaof", "127.0.0.1", &master.port.to_string()],
    );
    support::wait_until("the replica is in sync", || {
        replica
            .cli(&["INFO", "replication"])
            .contains("master_link_status:up")
            && master
                .cli(&["INFO", "replication"])
                .contains("state=online")
    });
    (master, replica)
}

/// The ack timeout: generous, since a replica on a loaded machine (make test runs suites side
/// by side) took more than 300 ms to acknowledge now and then; still well under the
/// io_timeout, so that a refusal within it is the ack timeout's doing.
const ACK: Duration = Duration::from_secs(1);

fn acked(ns: &str, replicas: u32) -> RedisConfig {
    RedisConfig::new()
        .with_namespace(ns)
        .with_io_timeout(Duration::from_secs(4))
        .with_replica_ack(replicas, ACK)
}

fn expect_unavailable<T: std::fmt::Debug>(result: Result<T, LockError>) -> String {
    match result {
        Err(LockError::Unavailable { reason }) => reason.to_string(),
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

#[test]
fn a_grant_renewal_and_hand_off_are_on_the_replica_before_the_caller_holds_them() {
    let (master, replica) = pair(6441, 6442);
    support::run(async {
        let ns = support::fresh_scope();
        let locks = RedisLocks::connect_with(&master.url(), acked(&ns, 1))
            .await
            .unwrap();
        let ttl = Duration::from_secs(10);
        // The first call finds no script on the fresh server (NOSCRIPT in the pipeline).
        let mut first = locks
            .try_lock("r/a", "one", ttl)
            .await
            .unwrap()
            .expect("free");
        assert_eq!(
            lease_keys(&replica, &ns),
            1,
            "the lease is on the replica when try_lock returns"
        );
        first.renew(ttl).await.unwrap();
        let second = common::hand_off(&locks, first, ttl).await;
        let on_replica = replica.cli(&["HGETALL", &format!("{{{ns}}}:lock:r/a")]);
        assert!(
            on_replica.contains(&second.token().to_string()),
            "{on_replica}"
        );
        assert_eq!(second.release().await, Ok(true));
        // A script flushed from the server is loaded again.
        master.cli(&["SCRIPT", "FLUSH"]);
        let again = locks
            .try_lock("r/a", "one", ttl)
            .await
            .unwrap()
            .expect("free");
        assert_eq!(again.release().await, Ok(true));
    });
}

#[test]
fn a_grant_no_replica_acknowledges_is_unavailable_and_withdrawn() {
    let (master, replica) = pair(6443, 6444);
    support::run(async {
        let ns = support::fresh_scope();
        let ttl = Duration::from_secs(10);
        // Two replicas asked for, one exists: never enough.
        let two = RedisLocks::connect_with(&master.url(), acked(&ns, 2))
            .await
            .unwrap();
        let message = expect_unavailable(two.try_lock("r/b", "one", ttl).await);
        assert!(
            message.contains("1 of 2 replicas acknowledged the grant"),
            "{message}"
        );
        let plain = RedisLocks::connect_with(&master.url(), RedisConfig::new().with_namespace(&ns))
            .await
            .unwrap();
        support::wait_until("the unacknowledged grant is withdrawn", || {
            lease_keys(&master, &ns) == 0
        });
        assert!(plain.holder("r/b").await.unwrap().is_none());

        // The replica frozen: grants and waits answer Unavailable within the ack timeout.
        let one = RedisLocks::connect_with(&master.url(), acked(&ns, 1))
            .await
            .unwrap();
        let mut held = one
            .try_lock("r/c", "one", ttl)
            .await
            .unwrap()
            .expect("free");
        replica.pause();
        let started = Instant::now();
        let message = expect_unavailable(one.try_lock("r/d", "one", ttl).await);
        assert!(
            message.contains("0 of 1 replicas acknowledged the grant"),
            "{message}"
        );
        assert!(started.elapsed() < ACK * 3, "{:?}", started.elapsed());
        let message = expect_unavailable(held.renew(ttl).await);
        assert!(message.contains("renewal"), "{message}");
        // A waiter handed the lease while the replica is frozen is not told it holds it.
        let waiter = {
            let one = one.clone();
            tokio::spawn(async move {
                one.acquire("r/c", "two", ttl)
                    .timeout(Duration::from_secs(5))
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            held.release().await,
            Ok(true),
            "releases are not waited for"
        );
        expect_unavailable(waiter.await.unwrap());
        support::wait_until("the unacknowledged grants are withdrawn", || {
            lease_keys(&master, &ns) == 0
        });
        assert!(plain.holder("r/c").await.unwrap().is_none());
        assert!(plain.holder("r/d").await.unwrap().is_none());

        // Thawed: acknowledged again.
        replica.resume();
        let back = one
            .try_lock("r/d", "one", ttl)
            .await
            .unwrap()
            .expect("free");
        assert_eq!(back.release().await, Ok(true));
    });
}

/// A failover by hand within the replication lag: the replica is promoted (`REPLICAOF NO
/// ONE`) while the old master still takes a grant (as across a partition, or a failover
/// before the last writes were replicated), then the old master dies. (Freezing the replica
/// instead does not lose the write: it sits in the replica's socket buffer and is applied on
/// SIGCONT.) Without replica ack, a lease granted by the old
/// master only is granted again by the new one (a double grant within the replication lag),
/// and the new token is above the old one, so a fence refuses the stale holder: each grant's
/// token is at least the server's `TIME` in µs, and the new master's clock (the same host's
/// here) reads later than the old master's did at its last grant. With replica ack, that
/// grant is never handed to a caller: it answers `Unavailable`.
#[test]
fn a_failover_to_a_replica_that_missed_a_grant_grants_again_with_a_higher_token_unless_acked() {
    use alkstore_redis::alkstore_mem::Fence;
    for ack in [false, true] {
        let (mut master, replica) = if ack {
            pair(6447, 6448)
        } else {
            pair(6437, 6438)
        };
        support::run(async {
            let ns = support::fresh_scope();
            let ttl = Duration::from_secs(30);
            let config = if ack {
                acked(&ns, 1)
            } else {
                RedisConfig::new().with_namespace(&ns)
            };
            let old = RedisLocks::connect_with(&master.url(), config)
                .await
                .unwrap();
            // A grant the replica has: its token is the floor the new master must pass.
            let seen = old
                .try_lock("f/seen", "one", ttl)
                .await
                .unwrap()
                .expect("free");
            support::wait_until("the replica has it", || lease_keys(&replica, &ns) == 1);
            assert!(replica.cli(&["REPLICAOF", "NO", "ONE"]).starts_with("OK"));
            let missed = old.try_lock("f/x", "one", ttl).await;
            let missed = if ack {
                let message = expect_unavailable(missed);
                assert!(
                    message.contains("of 1 replicas acknowledged the grant"),
                    "{message}"
                );
                None
            } else {
                Some(missed.unwrap().expect("free on the master"))
            };
            master.kill();
            // The new master has no replica of its own: a store asking for an ack would get
            // Unavailable there, so this one does not.
            let plain = RedisConfig::new().with_namespace(&ns);
            let new = RedisLocks::connect_with(&replica.url(), plain)
                .await
                .unwrap();
            let again = new
                .try_lock("f/x", "two", ttl)
                .await
                .unwrap()
                .expect("free on the new master");
            let fence = Fence::new();
            fence.check(seen.token()).unwrap();
            assert!(again.token() > seen.token());
            match missed {
                Some(stale) => {
                    // Two holders believe they hold f/x; the fence takes the newer only.
                    assert!(
                        again.token() > stale.token(),
                        "{} vs {}",
                        again.token(),
                        stale.token()
                    );
                    fence.check(again.token()).unwrap();
                    assert!(fence.check(stale.token()).is_err());
                    stale.detach();
                }
                None => fence.check(again.token()).unwrap(),
            }
            seen.detach();
            assert_eq!(again.release().await, Ok(true));
        });
    }
}
