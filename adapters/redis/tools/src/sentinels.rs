//! A Sentinel set of the caller's own on loopback: a master, one replica and three
//! sentinels (quorum 2), and the two ways to fail the master over: `SENTINEL FAILOVER`, and
//! SIGKILL of the master (which comes back as a replica of the new one).

use std::time::{Duration, Instant};

use alkstore_kit_harness::support;

use crate::server::{Server, cli, wait_for};

/// The name the sentinels know the master by.
pub const MASTER_NAME: &str = "alkmaster";

/// How long a failover, or the set settling after one, may take on a loaded machine.
const SETTLE: Duration = Duration::from_secs(60);

/// Two Redis servers (one master, one replica; which is which changes with each failover)
/// and three sentinels, on the ports `base..base + 5` shifted by [`support::port`].
#[derive(Debug)]
pub struct SentinelSet {
    /// The two Redis servers, by port; a killed one is restarted as a replica.
    redis: [Server; 2],
    sentinels: Vec<Server>,
}

/// `SENTINEL <what> alkmaster` on a sentinel: one map of fields per entry.
fn entries(port: u16, what: &str) -> Vec<Vec<(String, String)>> {
    // `redis-cli` without a tty prints every element on a line of its own: the entries'
    // fields come as name, value, name, value, …; each entry starts with "name".
    let out = cli(port, &["SENTINEL", what, MASTER_NAME]);
    let lines: Vec<&str> = out.lines().collect();
    let mut all: Vec<Vec<(String, String)>> = Vec::new();
    for pair in lines.chunks(2) {
        let [key, value] = pair else { break };
        if *key == "name" {
            all.push(Vec::new());
        }
        if let Some(entry) = all.last_mut() {
            entry.push(((*key).to_string(), (*value).to_string()));
        }
    }
    all
}

fn field<'a>(entry: &'a [(String, String)], key: &str) -> &'a str {
    entry
        .iter()
        .find(|(k, _)| k == key)
        .map_or("", |(_, v)| v.as_str())
}

impl SentinelSet {
    /// Starts the set on `base..base + 5` (through [`support::port`]) and waits until it is
    /// ready to fail over ([`settled`](Self::settled)).
    pub fn start(base: u16) -> SentinelSet {
        let port = |i: u16| support::port(base + i);
        let master = Server::redis(port(0), "redis-sentinel-set", &[]);
        let replica_of = port(0).to_string();
        let replica = Server::redis(
            port(1),
            "redis-sentinel-set",
            &["--replicaof", "127.0.0.1", &replica_of],
        );
        let sentinels = (2..5)
            .map(|i| Server::sentinel(port(i), MASTER_NAME, port(0)))
            .collect();
        let set = SentinelSet {
            redis: [master, replica],
            sentinels,
        };
        set.settled();
        set
    }

    /// `redis+sentinel://` URL of the set.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port()))
            .collect();
        format!("redis+sentinel://{}/{MASTER_NAME}", hosts.join(","))
    }

    /// The master's port as sentinel `i` names it (`None` if it names none or cannot be
    /// asked).
    fn named_by(&self, i: usize) -> Option<u16> {
        let out = self.sentinels[i].cli(&["SENTINEL", "get-master-addr-by-name", MASTER_NAME]);
        out.lines().nth(1)?.trim().parse().ok()
    }

    /// The master's port, as all three sentinels name it (waits until they agree).
    pub fn master_port(&self) -> u16 {
        let mut agreed = None;
        wait_for("the sentinels agree on the master", SETTLE, || {
            let named: Vec<Option<u16>> = (0..3).map(|i| self.named_by(i)).collect();
            agreed = named[0].filter(|p| named.iter().all(|n| *n == Some(*p)));
            agreed.is_some()
        });
        agreed.unwrap_or_default()
    }

    fn index_of(&self, port: u16) -> usize {
        usize::from(self.redis[1].port() == port)
    }

    /// Waits until the set can fail over again: the sentinels agree on the master, it says
    /// it is master, the other server is its replica with its link up, and every sentinel
    /// knows the two others and sees the replica as healthy.
    pub fn settled(&self) {
        let master = self.master_port();
        let replica = self.redis[1 - self.index_of(master)].port();
        wait_for("the master says it is master", SETTLE, || {
            cli(master, &["ROLE"]).starts_with("master")
        });
        wait_for("the replica's link to the master is up", SETTLE, || {
            let info = cli(replica, &["INFO", "replication"]);
            info.contains(&format!("master_port:{master}"))
                && info.contains("master_link_status:up")
        });
        wait_for(
            "every sentinel knows the others and the replica",
            SETTLE,
            || {
                self.sentinels.iter().all(|s| {
                    let peers = entries(s.port(), "SENTINELS");
                    let replicas = entries(s.port(), "REPLICAS");
                    peers.len() == 2
                        && replicas.iter().any(|r| {
                            field(r, "port") == replica.to_string()
                                && field(r, "flags") == "slave"
                                && field(r, "master-link-status") == "ok"
                        })
                })
            },
        );
    }

    /// Fails over with `SENTINEL FAILOVER` (the old master is made a replica by the
    /// sentinels); waits until the set has settled again. Answers the new master's port and
    /// how long until all three sentinels named it.
    pub fn failover_by_command(&mut self) -> (u16, Duration) {
        let old = self.master_port();
        let start = Instant::now();
        let answer = self.sentinels[0].cli(&["SENTINEL", "FAILOVER", MASTER_NAME]);
        assert!(answer.starts_with("OK"), "SENTINEL FAILOVER: {answer}");
        let new = self.await_new_master(old);
        let took = start.elapsed();
        self.settled();
        (new, took)
    }

    /// Fails over by SIGKILL of the master; once the sentinels name the replica, restarts
    /// the old master as its replica and waits until the set has settled again. Answers the
    /// new master's port and how long until all three sentinels named it.
    pub fn failover_by_kill(&mut self) -> (u16, Duration) {
        let old = self.master_port();
        let at = self.index_of(old);
        let start = Instant::now();
        self.redis[at].kill();
        let new = self.await_new_master(old);
        let took = start.elapsed();
        let new_port = new.to_string();
        self.redis[at] = Server::redis(
            old,
            "redis-sentinel-set",
            &["--replicaof", "127.0.0.1", &new_port],
        );
        self.settled();
        (new, took)
    }

    fn await_new_master(&self, old: u16) -> u16 {
        let mut new = old;
        let what = format!("the sentinels name a master other than {old}");
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            wait_for(&what, SETTLE, || {
                new = self.master_port();
                new != old
            })
        }));
        if let Err(panic) = result {
            for s in &self.sentinels {
                eprintln!("sentinel {}:\n{}", s.port(), s.log_tail());
            }
            std::panic::resume_unwind(panic);
        }
        new
    }

    /// Sentinel `i` (0, 1 or 2, in the URL's order).
    pub fn sentinel(&self, i: usize) -> &Server {
        &self.sentinels[i]
    }

    /// The Redis server at `port` (one of the two).
    pub fn redis(&self, port: u16) -> &Server {
        &self.redis[self.index_of(port)]
    }
}
