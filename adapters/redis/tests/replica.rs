//! `RedisConfig::with_replica_ack`: a master on 6441 and its replica on 6442
//! (`--replicaof`), servers of the test's own (scratch dirs, no persistence, killed by pid
//! when dropped). A grant or renewal is acknowledged by the replica before the caller holds
//! it; with the replica frozen (SIGSTOP) or too few replicas, the call is `Unavailable` and
//! the grant is withdrawn on the master.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use alkstore_kit_harness::support;
use alkstore_redis::alkstore_mem::LockError;
use alkstore_redis::{RedisConfig, RedisLocks};

/// A redis-server of the test's own on 127.0.0.1:`port` with `extra` arguments.
struct Node {
    port: u16,
    dir: PathBuf,
    pid: Option<u32>,
}

impl Node {
    fn start(port: u16, extra: &[&str]) -> Node {
        let port = support::port(port);
        assert!(
            !support::listens(port),
            "something already listens on 127.0.0.1:{port}; not touching it"
        );
        let dir = support::scratch_dir("redis-replica", port);
        let pidfile = dir.join("redis.pid");
        let status = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(&dir)
            .args(["--save", "", "--appendonly", "no", "--daemonize", "yes"])
            .arg("--pidfile")
            .arg(&pidfile)
            .arg("--logfile")
            .arg(dir.join("redis.log"))
            .args(extra)
            .status()
            .expect("redis-server runs (make setup installs it)");
        assert!(status.success());
        support::wait_until("redis-server writes its pid", || {
            std::fs::read_to_string(&pidfile).is_ok_and(|p| p.trim().parse::<u32>().is_ok())
        });
        let pid = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let node = Node {
            port,
            dir,
            pid: Some(pid),
        };
        support::wait_until("redis-server answers", || {
            node.cli(&["ping"]).starts_with("PONG")
        });
        node
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, ns: &str) -> usize {
        let pattern = format!("{{{ns}}}:lock:*");
        self.cli(&["--scan", "--pattern", &pattern])
            .lines()
            .filter(|l| !l.is_empty())
            .count()
    }
}

impl Node {
    /// SIGKILL (after SIGCONT), and waits until it is gone.
    fn kill(&mut self) {
        if let Some(pid) = self.pid.take() {
            support::signal(pid, "-CONT");
            support::signal(pid, "-KILL");
            support::wait_gone(pid);
        }
    }

    fn signal(&self, signal: &str) {
        self.pid
            .into_iter()
            .for_each(|pid| support::signal(pid, signal));
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A master and one replica in sync.
fn pair(master_port: u16, replica_port: u16) -> (Node, Node) {
    let master = Node::start(master_port, &[]);
    let replica = Node::start(
        replica_port,
        &["--replicaof", "127.0.0.1", &master.port.to_string()],
    );
    support::wait_until("the replica is in sync", || {
        replica
            .cli(&["INFO", "replication"])
            .contains("master_link_status:up")
            && master
                .cli(&["INFO", "replication"])
                .contains("connected_slaves:1")
    });
    (master, replica)
}

fn acked(ns: &str, replicas: u32) -> RedisConfig {
    RedisConfig::new()
        .with_namespace(ns)
        .with_io_timeout(Duration::from_secs(2))
        .with_replica_ack(replicas, Duration::from_millis(300))
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
            replica.keys(&ns),
            1,
            "the lease is on the replica when try_lock returns"
        );
        first.renew(ttl).await.unwrap();
        let waiter = {
            let locks = locks.clone();
            tokio::spawn(async move {
                locks
                    .acquire("r/a", "two", ttl)
                    .timeout(Duration::from_secs(5))
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        let token = first.token();
        assert_eq!(first.release().await, Ok(true));
        let second = waiter.await.unwrap().unwrap().expect("handed over");
        assert!(second.token() > token);
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
            master.keys(&ns) == 0
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
        replica_pause(&replica);
        let started = Instant::now();
        let message = expect_unavailable(one.try_lock("r/d", "one", ttl).await);
        assert!(
            message.contains("0 of 1 replicas acknowledged the grant"),
            "{message}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
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
            master.keys(&ns) == 0
        });
        assert!(plain.holder("r/c").await.unwrap().is_none());
        assert!(plain.holder("r/d").await.unwrap().is_none());

        // Thawed: acknowledged again.
        replica_resume(&replica);
        let back = one
            .try_lock("r/d", "one", ttl)
            .await
            .unwrap()
            .expect("free");
        assert_eq!(back.release().await, Ok(true));
    });
}

fn replica_pause(node: &Node) {
    node.signal("-STOP");
}

fn replica_resume(node: &Node) {
    node.signal("-CONT");
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
            support::wait_until("the replica has it", || replica.keys(&ns) == 1);
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
