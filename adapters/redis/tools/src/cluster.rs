//! A Redis Cluster of the caller's own on loopback: 3 masters and 3 replicas made by
//! `redis-cli --cluster create`, a slot moved by hand (`CLUSTER SETSLOT … IMPORTING /
//! MIGRATING`, `MIGRATE`, `SETSLOT … NODE`), and a master killed.

use std::process::Command;
use std::time::Duration;

use alkstore_kit_harness::support;

use crate::server::{Server, cli, wait_for};

const SETTLE: Duration = Duration::from_secs(60);

/// One line of `CLUSTER NODES`.
#[derive(Clone, Debug)]
pub struct Node {
    /// The node's id.
    pub id: String,
    /// Its port.
    pub port: u16,
    /// Whether it is a master (not failed).
    pub master: bool,
    /// Its master's id, for a replica.
    pub master_id: String,
    /// The slots it serves, as inclusive ranges.
    pub slots: Vec<(u16, u16)>,
}

/// `CLUSTER NODES` as `port` sees it (failed and suspected nodes left out).
pub fn nodes(port: u16) -> Vec<Node> {
    cli(port, &["CLUSTER", "NODES"])
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            let addr = f.get(1)?.split('@').next()?;
            let port = addr.rsplit(':').next()?.parse().ok()?;
            let flags = *f.get(2)?;
            // A node failed, or only suspected to (`fail?`), serves nothing.
            if flags.contains("fail") {
                return None;
            }
            let slots = f
                .iter()
                .skip(8)
                .filter(|s| !s.starts_with('['))
                .filter_map(|s| {
                    let (a, b) = s.split_once('-').unwrap_or((s, s));
                    Some((a.parse().ok()?, b.parse().ok()?))
                })
                .collect();
            Some(Node {
                id: f[0].to_string(),
                port,
                master: flags.contains("master"),
                master_id: f.get(3)?.to_string(),
                slots,
            })
        })
        .collect()
}

/// Six `redis-server --cluster-enabled yes` on `base..base + 6` (through
/// [`support::port`]), made one cluster with one replica per master.
#[derive(Debug)]
pub struct ClusterSet {
    servers: Vec<Server>,
}

impl ClusterSet {
    /// Starts the six nodes, creates the cluster and waits until every node says it is ok.
    pub fn start(base: u16) -> ClusterSet {
        let servers: Vec<Server> = (0..6)
            .map(|i| {
                Server::redis(
                    support::port(base + i),
                    "redis-cluster",
                    &[
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        "1000",
                    ],
                )
            })
            .collect();
        let addrs: Vec<String> = servers
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port()))
            .collect();
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .expect("redis-cli runs");
        assert!(
            out.status.success(),
            "redis-cli --cluster create: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let set = ClusterSet { servers };
        set.settled();
        set
    }

    /// The live nodes' ports.
    pub fn ports(&self) -> Vec<u16> {
        self.servers
            .iter()
            .filter(|s| s.alive())
            .map(Server::port)
            .collect()
    }

    /// `redis+cluster://` URL naming every node.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .servers
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port()))
            .collect();
        format!("redis+cluster://{}", hosts.join(","))
    }

    /// Waits until every live node says `cluster_state:ok` and sees 3 masters that serve
    /// all 16384 slots.
    pub fn settled(&self) {
        wait_for("the cluster is ok on every node", SETTLE, || {
            self.ports().into_iter().all(|p| {
                let served: u32 = nodes(p)
                    .iter()
                    .filter(|n| n.master)
                    .flat_map(|n| n.slots.iter())
                    .map(|(a, b)| u32::from(b - a) + 1)
                    .sum();
                cli(p, &["CLUSTER", "INFO"]).contains("cluster_state:ok") && served == 16384
            })
        });
    }

    /// The master that serves `slot`, as a live node sees it.
    pub fn owner(&self, slot: u16) -> Node {
        let port = self.ports()[0];
        nodes(port)
            .into_iter()
            .find(|n| n.master && n.slots.iter().any(|(a, b)| (*a..=*b).contains(&slot)))
            .unwrap_or_else(|| panic!("no master serves slot {slot}"))
    }

    /// The masters, as a live node sees them.
    pub fn masters(&self) -> Vec<Node> {
        nodes(self.ports()[0])
            .into_iter()
            .filter(|n| n.master)
            .collect()
    }

    /// The replica of master `id`.
    pub fn replica_of(&self, id: &str) -> Node {
        nodes(self.ports()[0])
            .into_iter()
            .find(|n| !n.master && n.master_id == id)
            .unwrap_or_else(|| panic!("no replica of {id}"))
    }

    /// `CLUSTER KEYSLOT key`.
    pub fn slot(&self, key: &str) -> u16 {
        let out = cli(self.ports()[0], &["CLUSTER", "KEYSLOT", key]);
        out.trim().parse().expect("a slot")
    }

    /// Starts moving `slot` from `from` to `to`: `to` imports it, `from` migrates it.
    pub fn begin_move(&self, slot: u16, from: &Node, to: &Node) {
        let slot = slot.to_string();
        let ok = cli(
            to.port,
            &["CLUSTER", "SETSLOT", &slot, "IMPORTING", &from.id],
        );
        assert!(ok.starts_with("OK"), "SETSLOT IMPORTING: {ok}");
        let ok = cli(
            from.port,
            &["CLUSTER", "SETSLOT", &slot, "MIGRATING", &to.id],
        );
        assert!(ok.starts_with("OK"), "SETSLOT MIGRATING: {ok}");
    }

    /// Moves `keys` of the slot from `from` to `to` (one `MIGRATE`).
    pub fn migrate(&self, from: &Node, to: &Node, keys: &[String]) {
        let port = to.port.to_string();
        let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
        args.extend(keys.iter().map(String::as_str));
        let ok = cli(from.port, &args);
        assert!(ok.starts_with("OK"), "MIGRATE {keys:?}: {ok}");
    }

    /// The keys of `slot` on `port`.
    pub fn keys_in(&self, port: u16, slot: u16) -> Vec<String> {
        let slot = slot.to_string();
        cli(port, &["CLUSTER", "GETKEYSINSLOT", &slot, "1000"])
            .lines()
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect()
    }

    /// Ends a move: every key left goes, and every master learns that `to` serves `slot`.
    pub fn end_move(&self, slot: u16, from: &Node, to: &Node) {
        let rest = self.keys_in(from.port, slot);
        if !rest.is_empty() {
            self.migrate(from, to, &rest);
        }
        let s = slot.to_string();
        for port in [to.port, from.port] {
            let ok = cli(port, &["CLUSTER", "SETSLOT", &s, "NODE", &to.id]);
            assert!(ok.starts_with("OK"), "SETSLOT NODE on {port}: {ok}");
        }
        for master in self.masters() {
            cli(master.port, &["CLUSTER", "SETSLOT", &s, "NODE", &to.id]);
        }
        wait_for("every node sees the slot moved", SETTLE, || {
            self.ports().into_iter().all(|p| {
                nodes(p).iter().any(|n| {
                    n.id == to.id && n.slots.iter().any(|(a, b)| (*a..=*b).contains(&slot))
                })
            })
        });
    }

    /// Kills the node on `port` (SIGKILL) and waits until the cluster is ok again without it
    /// (its replica promoted, for a master): no live node counts it as serving.
    pub fn kill(&mut self, port: u16) {
        let id = nodes(port)
            .into_iter()
            .find(|n| n.port == port)
            .map(|n| n.id)
            .unwrap_or_default();
        if let Some(server) = self.servers.iter_mut().find(|s| s.port() == port) {
            server.kill();
        }
        wait_for("the cluster counts the killed node out", SETTLE, || {
            self.ports()
                .into_iter()
                .all(|p| nodes(p).iter().all(|n| n.id != id))
        });
        self.settled();
    }
}
