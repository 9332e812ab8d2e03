//! One `redis-server` or `redis-sentinel` of a test's own on 127.0.0.1: a scratch dir, no
//! persistence, daemonized with a pid file, killed by that pid when dropped (never by name).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use alkstore_kit_harness::support;

/// A server process of the caller's own.
#[derive(Debug)]
pub struct Server {
    port: u16,
    dir: PathBuf,
    pid: Option<u32>,
}

/// Waits (up to `limit`) until `check` holds; panics with `what` if it never does.
pub fn wait_for(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < limit, "never within {limit:?}: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A fresh scratch dir, never the one of an earlier server on the same port (a server
/// restarted on its port must not lose its dir when the killed one is dropped).
fn scratch(kind: &str, port: u16) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    support::scratch_dir(
        &format!("{kind}{}", N.fetch_add(1, Ordering::Relaxed)),
        port,
    )
}

/// The pid written to `pidfile`, once it is there.
fn read_pid(pidfile: &Path) -> u32 {
    wait_for("the server writes its pid", Duration::from_secs(10), || {
        std::fs::read_to_string(pidfile).is_ok_and(|p| p.trim().parse::<u32>().is_ok())
    });
    std::fs::read_to_string(pidfile)
        .unwrap_or_default()
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("a pid in {}", pidfile.display()))
}

impl Server {
    /// A `redis-server` on the real port `port` (already shifted by
    /// [`support::port`]) with `extra` arguments (`--replicaof`, `--cluster-enabled`, …).
    ///
    /// # Panics
    /// If something listens on the port already (it is never touched), or the server does
    /// not start.
    pub fn redis(port: u16, kind: &str, extra: &[&str]) -> Server {
        assert!(
            !support::listens(port),
            "something already listens on 127.0.0.1:{port}; not touching it"
        );
        let dir = scratch(kind, port);
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
            .expect("redis-server runs (scripts/redis-setup.sh installs it)");
        assert!(status.success(), "redis-server on {port} did not start");
        Server::started(port, dir, &pidfile)
    }

    /// A `redis-sentinel` on the real port `port` watching `master` (`127.0.0.1:<port>`) under
    /// the name `name`, quorum 2, the master down after 1 s of silence.
    ///
    /// # Panics
    /// As [`redis`](Self::redis).
    pub fn sentinel(port: u16, name: &str, master: u16) -> Server {
        assert!(
            !support::listens(port),
            "something already listens on 127.0.0.1:{port}; not touching it"
        );
        let dir = scratch("redis-sentinel", port);
        let pidfile = dir.join("sentinel.pid");
        let conf = dir.join("sentinel.conf");
        let text = format!(
            "port {port}\nbind 127.0.0.1\ndaemonize yes\npidfile {pid}\nlogfile {log}\ndir {dir}\n\
             sentinel monitor {name} 127.0.0.1 {master} 2\n\
             sentinel down-after-milliseconds {name} 1000\n\
             sentinel failover-timeout {name} 5000\n\
             sentinel parallel-syncs {name} 1\n",
            pid = pidfile.display(),
            log = dir.join("sentinel.log").display(),
            dir = dir.display(),
        );
        std::fs::write(&conf, text).expect("the sentinel's config is written");
        let status = Command::new("redis-sentinel")
            .arg(&conf)
            .status()
            .expect("redis-sentinel runs (scripts/redis-setup.sh installs it)");
        assert!(status.success(), "redis-sentinel on {port} did not start");
        Server::started(port, dir, &pidfile)
    }

    fn started(port: u16, dir: PathBuf, pidfile: &Path) -> Server {
        let pid = read_pid(pidfile);
        let server = Server {
            port,
            dir,
            pid: Some(pid),
        };
        wait_for(
            &format!("the server on {port} answers"),
            Duration::from_secs(10),
            || server.cli(&["ping"]).starts_with("PONG"),
        );
        server
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis-cli -p <port> args…`, its standard output (empty when it cannot connect).
    pub fn cli(&self, args: &[&str]) -> String {
        cli(self.port, args)
    }

    /// Kills it with SIGKILL and waits until it is gone. Idempotent.
    pub fn kill(&mut self) {
        if let Some(pid) = self.pid.take() {
            support::signal(pid, "-KILL");
            support::wait_gone(pid);
        }
    }

    /// Freezes it (SIGSTOP: it accepts connections but answers nothing) or thaws it
    /// (SIGCONT). Dropping a frozen server kills it all the same (SIGKILL).
    pub fn freeze(&self, frozen: bool) {
        if let Some(pid) = self.pid {
            support::signal(pid, if frozen { "-STOP" } else { "-CONT" });
        }
    }

    /// Whether it runs (not killed).
    pub fn alive(&self) -> bool {
        self.pid.is_some()
    }

    /// The tail of its log (for a failure's message).
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "log"));
        let text = log
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `redis-cli -p <port> args…`, its standard output (empty when it cannot connect).
pub fn cli(port: u16, args: &[&str]) -> String {
    Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_default()
}
