//! A PgBouncer of a test's own in front of the shared cluster: `pgbouncer -d` (Debian's
//! `pgbouncer` package, installed by scripts/pg-setup.sh) run as user `postgres` with a
//! scratch dir, on 127.0.0.1:`port` (shifted by `ALKSTORE_TEST_PORT_OFFSET`), trust auth for
//! the users it is given; stopped by its pid (from its pidfile) when dropped, also when the
//! test panics.
#![allow(dead_code, reason = "each test binary uses part of it")]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use alkstore_kit_harness::support;

pub struct Bouncer {
    pub port: u16,
    dir: PathBuf,
    pid: Option<u32>,
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

impl Bouncer {
    /// Starts PgBouncer on base port `port` with `pool_mode = mode`, in front of the shared
    /// cluster (`ALKSTORE_PG_URL`), letting `users` in.
    pub fn start(port: u16, mode: &str, users: &[&str]) -> Bouncer {
        let port = support::port(port);
        assert!(
            !support::listens(port),
            "something already listens on 127.0.0.1:{port}; not touching it"
        );
        let dir = support::scratch_dir("pgbouncer", port);
        let pg = crate::common::url();
        let pg_port = pg
            .rsplit_once(':')
            .and_then(|(_, rest)| rest.split('/').next())
            .expect("a port in ALKSTORE_PG_URL");
        let auth: String = users.iter().map(|u| format!("\"{u}\" \"\"\n")).collect();
        std::fs::write(dir.join("users.txt"), auth).unwrap();
        let d = dir.display();
        let ini = format!(
            "[databases]\npostgres = host=127.0.0.1 port={pg_port} dbname=postgres\n\
             [pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n\
             auth_type = trust\nauth_file = {d}/users.txt\npool_mode = {mode}\n\
             max_client_conn = 400\ndefault_pool_size = 40\n\
             pidfile = {d}/pgbouncer.pid\nlogfile = {d}/pgbouncer.log\n"
        );
        std::fs::write(dir.join("pgbouncer.ini"), ini).unwrap();
        let mut command = if is_root() {
            let status = Command::new("chown")
                .args(["-R", "postgres"])
                .arg(&dir)
                .status()
                .unwrap();
            assert!(status.success());
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--", "pgbouncer"]);
            c
        } else {
            Command::new("pgbouncer")
        };
        let out = command
            .arg("-d")
            .arg(dir.join("pgbouncer.ini"))
            .output()
            .expect("pgbouncer runs (scripts/pg-setup.sh installs it)");
        let mut bouncer = Bouncer {
            port,
            dir,
            pid: None,
        };
        assert!(
            out.status.success(),
            "pgbouncer: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let start = Instant::now();
        // The pid file is created before its number is written: wait for a number.
        let pid = || {
            std::fs::read_to_string(bouncer.dir.join("pgbouncer.pid"))
                .ok()
                .and_then(|pid| pid.trim().parse::<u32>().ok())
        };
        loop {
            if let (true, Some(pid)) = (support::listens(port), pid()) {
                bouncer.pid = Some(pid);
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "pgbouncer did not start: {}",
                std::fs::read_to_string(bouncer.dir.join("pgbouncer.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        bouncer
    }

    /// The URL of the shared cluster's `postgres` database through this PgBouncer, as `user`.
    pub fn url(&self, user: &str) -> String {
        format!("postgres://{user}@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Bouncer {
    fn drop(&mut self) {
        if let Some(pid) = self.pid.take() {
            support::signal(pid, "-INT");
            let start = Instant::now();
            while std::path::Path::new(&format!("/proc/{pid}")).exists()
                && start.elapsed() < Duration::from_secs(3)
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            support::signal(pid, "-KILL");
            support::wait_gone(pid);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
