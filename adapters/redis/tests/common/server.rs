//! [`RedisServer`]: a redis-server of a test's own (fault tests, TLS, replicas), never the
//! shared one.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use alkstore_kit_harness::support;

/// A redis-server of a test's own, on 127.0.0.1:`port` (through [`support::port`]), with a
/// scratch dir, no persistence; killed by its pid when dropped (also when the test panics).
/// Plain, or TLS only ([`launch_tls`](Self::launch_tls)), with extra arguments (a replica's
/// `--replicaof`).
pub struct RedisServer {
    pub port: u16,
    /// Its scratch dir, also its working dir (files its arguments name go there).
    pub dir: PathBuf,
    pid: Option<u32>,
    extra: Vec<String>,
    tls: bool,
}

impl RedisServer {
    /// Started, plain.
    pub fn start(port: u16) -> RedisServer {
        RedisServer::start_with(port, &[])
    }

    /// Started, plain, with `extra` arguments.
    pub fn start_with(port: u16, extra: &[&str]) -> RedisServer {
        let mut server = RedisServer::unstarted(port);
        server.extra = extra.iter().map(|a| (*a).to_owned()).collect();
        server.launch();
        server
    }

    /// Its scratch dir made, not started yet (write the files its arguments name into
    /// [`dir`](Self::dir) first).
    pub fn unstarted(port: u16) -> RedisServer {
        let port = support::port(port);
        RedisServer {
            port,
            dir: support::scratch_dir("redis", port),
            pid: None,
            extra: Vec::new(),
            tls: false,
        }
    }

    /// Starts it with TLS only on its port (`--port 0 --tls-port`), with `extra` arguments
    /// (the certificates); its CLI trusts `ca.crt` in its dir.
    pub fn launch_tls(&mut self, extra: &[&str]) {
        self.tls = true;
        self.extra = extra.iter().map(|a| (*a).to_owned()).collect();
        self.launch();
    }

    pub fn url(&self) -> String {
        let scheme = if self.tls { "rediss" } else { "redis" };
        format!("{scheme}://127.0.0.1:{}/", self.port)
    }

    /// Starts it (again) on its port, and waits until it answers.
    pub fn launch(&mut self) {
        let port = self.port;
        // A server of the previous test binary on this port may take a moment to go.
        let free = Instant::now() + Duration::from_secs(2);
        while support::listens(port) && Instant::now() < free {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            !support::listens(port),
            "something already listens on 127.0.0.1:{port}; not touching it"
        );
        let pidfile = self.dir.join("redis.pid");
        let _ = std::fs::remove_file(&pidfile);
        let port = port.to_string();
        let ports: &[&str] = if self.tls {
            &["--port", "0", "--tls-port", &port]
        } else {
            &["--port", &port]
        };
        let status = Command::new("redis-server")
            .args(ports)
            .args(["--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(&self.dir)
            .args(["--save", "", "--appendonly", "no", "--daemonize", "yes"])
            .arg("--pidfile")
            .arg(&pidfile)
            .arg("--logfile")
            .arg(self.dir.join("redis.log"))
            .args(&self.extra)
            .current_dir(&self.dir)
            .status()
            .expect("redis-server runs (make setup installs it)");
        assert!(status.success());
        support::wait_until("redis-server writes its pid", || {
            std::fs::read_to_string(&pidfile).is_ok_and(|p| p.trim().parse::<u32>().is_ok())
        });
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        self.pid = Some(pid.trim().parse().unwrap());
        support::wait_until("redis-server answers", || {
            self.cli(&["ping"]).starts_with("PONG")
        });
    }

    /// Kills the server (SIGKILL: no chance to save anything) and waits until it is gone.
    pub fn kill(&mut self) {
        if let Some(pid) = self.pid.take() {
            support::signal(pid, "-CONT");
            support::signal(pid, "-KILL");
            support::wait_gone(pid);
        }
    }

    /// Kills and starts it again on the same port, empty (no persistence).
    pub fn restart(&mut self) {
        self.kill();
        self.launch();
    }

    /// SIGSTOP: the server keeps its connections but answers nothing.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// SIGCONT.
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        self.pid
            .into_iter()
            .for_each(|pid| support::signal(pid, signal));
    }

    /// Runs redis-cli with `args` against this server.
    pub fn cli(&self, args: &[&str]) -> String {
        let mut cli = Command::new("redis-cli");
        cli.args(["-p", &self.port.to_string()]);
        if self.tls {
            cli.arg("--tls")
                .arg("--cacert")
                .arg(self.dir.join("ca.crt"));
        }
        let out = cli
            .args(args)
            .output()
            .expect("redis-cli runs (make setup installs it)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
