//! Child processes for the multi-process suites (`processes.rs`, `kill9.rs`, `shmlocks.rs`,
//! ...): each is the test binary run again with `ALKSTORE_SQLITE_CHILD` set, so that its test
//! `child` (which calls [`child`]) plays a role and every other test is filtered out; it
//! talks to the parent by lines starting with `@@` on its stdout.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use alkstore_sqlite::{SqliteConfig, SqliteLocks};

use super::{raw, runtime};

const CHILD: &str = "ALKSTORE_SQLITE_CHILD";
const FILE: &str = "ALKSTORE_SQLITE_FILE";
const ARG: &str = "ALKSTORE_SQLITE_ARG";

pub fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

pub fn config() -> SqliteConfig {
    SqliteConfig::new().with_waiter_heartbeat(Duration::from_millis(100))
}

/// A child process running `role` on `path`, and its `@@` lines.
pub struct Proc {
    child: Child,
    lines: BufReader<ChildStdout>,
}

impl Proc {
    pub fn spawn(role: &str, path: &std::path::Path, arg: &str) -> Proc {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child", "--nocapture", "--test-threads=1"])
            .env(CHILD, role)
            .env(FILE, path)
            .env(ARG, arg)
            .stdout(Stdio::piped())
            .stdin(Stdio::piped())
            .spawn()
            .expect("the test binary runs again");
        let lines = BufReader::new(child.stdout.take().unwrap());
        Proc { child, lines }
    }

    /// The next `@@` line, without the marker.
    pub fn next(&mut self) -> String {
        loop {
            let mut line = String::new();
            let n = self.lines.read_line(&mut line).unwrap();
            if n == 0 {
                panic!("the child ended early: {:?}", self.child.wait());
            }
            // The harness may have printed "test child ... " on the same line.
            if let Some(at) = line.find("@@") {
                return line[at + 2..].trim_end().to_owned();
            }
        }
    }

    /// Tells the child to go on (a line on its stdin).
    pub fn go(&mut self) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(b"go\n").unwrap();
        stdin.flush().unwrap();
    }

    pub fn kill_9(&mut self) {
        // SIGKILL: no destructor, no clean-up, as a crash.
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    pub fn wait_ok(mut self) {
        let status = self.child.wait().unwrap();
        assert!(status.success(), "child failed: {status}");
    }
}

pub fn say(line: impl std::fmt::Display) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "@@{line}").unwrap();
    out.flush().unwrap();
}

/// The children's side: run as the test `child` of the binary that started it, with the
/// role in the environment; returns at once in a normal test run.
pub fn child() {
    let Ok(role) = std::env::var(CHILD) else {
        return;
    };
    let path = std::path::PathBuf::from(std::env::var(FILE).unwrap());
    let arg = std::env::var(ARG).unwrap_or_default();
    runtime().block_on(async move {
        if role == "open_try" {
            // Opens and tries the name `arg`: "refused <why>", or "granted <token>" / "busy".
            match alkstore_sqlite::open_with(&path, config()).await {
                Err(err) => say(format!("refused {err}")),
                Ok(locks) => match locks.try_lock(&arg, "child", Duration::from_secs(30)).await {
                    Ok(Some(lock)) => say(format!("granted {}", lock.token())),
                    Ok(None) => say("busy"),
                    Err(err) => say(format!("refused {err}")),
                },
            }
            std::process::exit(0);
        }
        if role == "open_many" {
            // Opens `arg` times, 25 at once (io_timeout 1 ms): "refused <n>" when every one
            // was refused, else "opened <k> of <n>".
            let times: usize = arg.parse().unwrap();
            let quick = config().with_io_timeout(Duration::from_millis(1));
            let mut opened = 0;
            for batch in (0..times).collect::<Vec<_>>().chunks(25) {
                let mut opens = tokio::task::JoinSet::new();
                for _ in batch {
                    opens.spawn(alkstore_sqlite::open_with(path.clone(), quick.clone()));
                }
                while let Some(open) = opens.join_next().await {
                    opened += usize::from(open.unwrap().is_ok());
                }
            }
            if opened == 0 {
                say(format!("refused {times}"));
            } else {
                say(format!("opened {opened} of {times}"));
            }
            std::process::exit(0);
        }
        if role == "begin_immediate" {
            // Tries to take the WAL write lock (busy timeout `arg` ms): "busy" or "took"
            // (then rolls back at once: nothing is written).
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.busy_timeout(Duration::from_millis(arg.parse().unwrap()))
                .unwrap();
            match conn.execute_batch("BEGIN IMMEDIATE") {
                Ok(()) => {
                    conn.execute_batch("ROLLBACK").unwrap();
                    say("took");
                }
                Err(err) if err.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) => {
                    say("busy");
                }
                Err(err) => say(format!("error {err}")),
            }
            std::process::exit(0);
        }
        let locks = alkstore_sqlite::open_with(&path, config()).await.unwrap();
        match role.as_str() {
            "cycles" => cycles(&locks, &arg).await,
            "try_cycles" => try_cycles(&locks, &arg).await,
            "hold" => {
                let lock = locks
                    .try_lock("x", "child", Duration::from_secs(1))
                    .await
                    .unwrap()
                    .unwrap();
                say(format!(
                    "held {} {}",
                    lock.token(),
                    lock.deadline().as_nanos()
                ));
                std::future::pending::<()>().await;
            }
            "wait" => {
                let waiting = locks.acquire("y", "child", Duration::from_secs(30));
                say("waiting");
                let _ = waiting.await;
                std::future::pending::<()>().await;
            }
            "latency" => {
                let rounds: usize = arg.parse().unwrap();
                let mut stdin = std::io::stdin().lines();
                for _ in 0..rounds {
                    stdin.next().unwrap().unwrap();
                    let lock = locks
                        .acquire("lat", "child", Duration::from_secs(30))
                        .await
                        .unwrap()
                        .unwrap();
                    say(format!("got {}", wall_ns()));
                    lock.release().await.unwrap();
                    say("released");
                }
            }
            "idle" => {
                let secs: u64 = arg.parse().unwrap();
                let waiting = locks.acquire("idle", "child", Duration::from_secs(30));
                let measure = async {
                    // Queued and settled first.
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    let (cpu0, t0) = (cpu_ticks(), Instant::now());
                    tokio::time::sleep(Duration::from_secs(secs)).await;
                    let cpu = (cpu_ticks() - cpu0) as f64 / ticks_per_second();
                    say(format!("cpu {}", 100.0 * cpu / t0.elapsed().as_secs_f64()));
                };
                tokio::select! {
                    _ = waiting => panic!("granted while measuring"),
                    () = measure => {}
                }
            }
            "churn" => {
                say("churning");
                loop {
                    if let Some(lock) = locks
                        .try_lock("churn", "child", Duration::from_millis(500))
                        .await
                        .unwrap()
                    {
                        say(format!("token {}", lock.token()));
                        lock.release().await.unwrap();
                    }
                }
            }
            "tx" => {
                let conn = raw(&path);
                conn.execute_batch(
                    "CREATE TABLE IF NOT EXISTS junk (x BLOB);
                     BEGIN IMMEDIATE;
                     INSERT INTO alkstore_leases VALUES ('ghost', 'dead', 1, 9e15, 1, 'r', 1);
                     WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
                     INSERT INTO junk SELECT randomblob(1000) FROM n;",
                )
                .unwrap();
                // Make sure pages of the transaction reach the WAL file before the kill.
                conn.cache_flush().unwrap();
                say("in-tx");
                std::thread::sleep(Duration::from_secs(3600));
            }
            other => panic!("unknown role {other}"),
        }
    });
    std::process::exit(0);
}

/// CPU time (user + system) of this process, in clock ticks, from /proc/self/stat.
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    // Fields 14 and 15 of the whole line (utime, stime): 11 and 12 after the command.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn ticks_per_second() -> f64 {
    let out = Command::new("getconf").arg("CLK_TCK").output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// 200 cycles on 4 names: enter and exit lines in the shared log around each lease.
async fn cycles(locks: &SqliteLocks, arg: &str) {
    let mut parts = arg.split(',');
    let id: usize = parts.next().unwrap().parse().unwrap();
    let log = parts.next().unwrap();
    let rounds: usize = parts.next().unwrap().parse().unwrap();
    let mut log = std::fs::OpenOptions::new().append(true).open(log).unwrap();
    for i in 0..rounds {
        let name = format!("n{}", (i + id) % 4);
        let lock = locks
            .acquire(&name, &format!("p{id}"), Duration::from_secs(30))
            .timeout(Duration::from_secs(60))
            .await
            .unwrap()
            .expect("granted within a minute");
        // One write each: O_APPEND keeps lines whole and in order.
        log.write_all(format!("enter {name} {} {id}\n", lock.token()).as_bytes())
            .unwrap();
        if i % 7 == 0 {
            tokio::task::yield_now().await;
        }
        log.write_all(format!("exit {name} {} {id}\n", lock.token()).as_bytes())
            .unwrap();
        assert!(lock.release().await.unwrap(), "released while live");
    }
}

/// `rounds` grants of the name `one` by `try_lock` alone (retried while busy): enter and exit
/// lines in the shared log around each lease.
async fn try_cycles(locks: &SqliteLocks, arg: &str) {
    let mut parts = arg.split(',');
    let id: usize = parts.next().unwrap().parse().unwrap();
    let log = parts.next().unwrap();
    let rounds: usize = parts.next().unwrap().parse().unwrap();
    let mut log = std::fs::OpenOptions::new().append(true).open(log).unwrap();
    let mut granted = 0;
    while granted < rounds {
        let Some(lock) = locks
            .try_lock("one", &format!("p{id}"), Duration::from_secs(30))
            .await
            .unwrap()
        else {
            tokio::time::sleep(Duration::from_micros(200)).await;
            continue;
        };
        granted += 1;
        log.write_all(format!("enter one {} {id}\n", lock.token()).as_bytes())
            .unwrap();
        tokio::task::yield_now().await;
        log.write_all(format!("exit one {} {id}\n", lock.token()).as_bytes())
            .unwrap();
        assert!(lock.release().await.unwrap(), "released while live");
    }
}
