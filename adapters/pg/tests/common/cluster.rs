//! [`PgCluster`]: a throwaway cluster of a test's own (fault tests, a standby), started and
//! stopped by its test, and driven by the shared fault suite as its [`Server`].

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use alkstore_kit_harness::{Server, support};

/// PostgreSQL's server binaries: $PG_BIN (set by scripts/pg-run.sh) or Debian's newest.
fn pg_bin() -> PathBuf {
    if let Ok(bin) = std::env::var("PG_BIN") {
        return PathBuf::from(bin);
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is installed (make pg-setup)")
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("initdb").exists())
        .collect();
    dirs.sort();
    dirs.pop().expect("PostgreSQL is installed (make pg-setup)")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// A throwaway cluster of a fault test's own, on `port` (5440-5449): initdb into a scratch
/// dir owned by user `postgres` (run through runuser when we are root), trust auth, listening
/// on 127.0.0.1 only, socket in the scratch dir. Stopped (`pg_ctl stop -m immediate`, then
/// SIGKILL by pid) and removed when dropped, also when the test panics. Never the shared one.
pub struct PgCluster {
    pub port: u16,
    dir: PathBuf,
    bin: PathBuf,
    pid: Option<u32>,
}

impl PgCluster {
    /// A new cluster on `port` (shifted by `ALKSTORE_TEST_PORT_OFFSET`): initdb into a scratch
    /// dir, then started.
    pub fn start(port: u16) -> PgCluster {
        PgCluster::create(port, "pg", "initdb", |cluster| {
            let mut initdb = cluster.as_postgres(&cluster.bin.join("initdb"));
            initdb.arg("-D").arg(cluster.data()).args([
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ]);
            initdb
        })
    }

    /// A cluster on `port` (shifted) in a scratch dir named after `tag` (owned by user
    /// `postgres` when we are root), its data dir made by the command `make` gives (`what`,
    /// for the failure message), then started.
    fn create(
        port: u16,
        tag: &str,
        what: &str,
        make: impl FnOnce(&PgCluster) -> Command,
    ) -> PgCluster {
        let port = support::port(port);
        let dir = support::scratch_dir(tag, port);
        let mut cluster = PgCluster {
            port,
            dir,
            bin: pg_bin(),
            pid: None,
        };
        if is_root() {
            let status = Command::new("chown")
                .args(["postgres"])
                .arg(&cluster.dir)
                .status()
                .unwrap();
            assert!(status.success());
        }
        let out = make(&cluster).output().unwrap();
        assert!(
            out.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        cluster.launch();
        cluster
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// A hot standby of `primary` on `port` (shifted as [`start`](Self::start) shifts it):
    /// `pg_basebackup -R` of the primary into a scratch dir (streaming replication, never
    /// promoted), then started. Stopped and removed when dropped, as any cluster.
    pub fn standby_of(primary: &PgCluster, port: u16) -> PgCluster {
        PgCluster::create(port, "pg-standby", "pg_basebackup", |cluster| {
            let mut backup = cluster.as_postgres(&cluster.bin.join("pg_basebackup"));
            backup
                .args(["-h", "127.0.0.1", "-p", &primary.port.to_string()])
                .args(["-U", "postgres", "-R", "-X", "stream", "-D"])
                .arg(cluster.data());
            backup
        })
    }

    fn as_postgres(&self, program: &Path) -> Command {
        if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Starts the server (again), on the same data.
    pub fn launch(&mut self) {
        // A cluster of the previous test binary may still be going away.
        let start = Instant::now();
        while support::listens(self.port) && start.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            !support::listens(self.port),
            "something already listens on 127.0.0.1:{}; not touching it",
            self.port
        );
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c fsync=off",
            self.port,
            self.dir.display()
        );
        let out = self
            .as_postgres(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.join("server.log"))
            .args(["-w", "-t", "30", "start", "-o", &options])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pg_ctl start: {}{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
        );
        let pidfile = std::fs::read_to_string(self.data().join("postmaster.pid")).unwrap();
        self.pid = Some(pidfile.lines().next().unwrap().trim().parse().unwrap());
    }

    /// The postmaster's pid and every process it started (the backends).
    fn pids(&self) -> Vec<u32> {
        let Some(pid) = self.pid else {
            return Vec::new();
        };
        let mut pids = vec![pid];
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
                continue;
            };
            // Field 4 (after the parenthesised name) is the parent's pid.
            let after = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
            if after.split(' ').nth(1).and_then(|p| p.parse::<u32>().ok()) == Some(pid) {
                pids.push(child);
            }
        }
        pids
    }

    fn signal(&self, signal: &str, pids: &[u32]) {
        for pid in pids {
            let _ = Command::new("kill")
                .args([signal, &pid.to_string()])
                .stderr(std::process::Stdio::null())
                .status();
        }
    }

    /// Stops the server at once (`pg_ctl stop -m immediate`: no shutdown checkpoint, like a
    /// crash) and waits until it is gone.
    pub fn stop(&mut self) {
        let pids = self.pids();
        self.signal("-CONT", &pids);
        if self.pid.is_some() {
            let _ = self
                .as_postgres(&self.bin.join("pg_ctl"))
                .arg("-D")
                .arg(self.data())
                .args(["-m", "immediate", "-w", "-t", "10", "stop"])
                .output();
        }
        if let Some(pid) = self.pid.take() {
            let start = Instant::now();
            while Path::new(&format!("/proc/{pid}")).exists()
                && std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| !s.contains(") Z "))
            {
                if start.elapsed() > Duration::from_secs(5) {
                    self.signal("-KILL", &[pid]);
                }
                assert!(start.elapsed() < Duration::from_secs(10));
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// An immediate stop, then a start on the same data (crash recovery).
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }

    /// SIGSTOP to the postmaster and every backend: connections stay open, nothing answers.
    pub fn pause(&self) {
        self.signal("-STOP", &self.pids());
    }

    /// SIGCONT to all of them.
    pub fn resume(&self) {
        self.signal("-CONT", &self.pids());
    }

    /// Runs `sql` with psql on this cluster; its output (unaligned, tuples only).
    pub fn psql(&self, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
            ])
            .args(["-d", "postgres", "-Atc", sql])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A cluster of a test's own, as the shared fault suite drives it.
impl Server for PgCluster {
    /// An immediate stop (SIGQUIT to the postmaster, which ends every backend: a crash;
    /// SIGKILL by pid if it lingers).
    fn kill(&mut self) {
        self.stop();
    }
    /// `pg_terminate_backend` on every client backend.
    fn kill_sessions(&self) {
        self.psql(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
        );
    }
    /// `pg_stat_database.sessions` over every database.
    fn sessions_accepted(&self) -> u64 {
        // Each backend counts itself when it first goes idle, right after its start.
        std::thread::sleep(Duration::from_millis(200));
        let out = self.psql("SELECT sum(sessions) FROM pg_stat_database");
        out.trim().parse().expect("pg_stat_database answers")
    }
    fn url(&self) -> String {
        PgCluster::url(self)
    }
    fn launch(&mut self) {
        PgCluster::launch(self);
    }
    fn pause(&self) {
        PgCluster::pause(self);
    }
    fn resume(&self) {
        PgCluster::resume(self);
    }
}
