//! Several OS processes on one file: mutual exclusion and token order under contention, and
//! the faults (`kill -9` of a holder, of a waiter, of a process in the middle of a write
//! transaction), the cross-process wake-up latency and the CPU cost of waiting.
//!
//! The children are this test binary run again with `ALKSTORE_SQLITE_CHILD` set (the test
//! `child` does the work and every other test is filtered out); they talk to the parent by
//! lines starting with `@@` on their stdout.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use alkstore_sqlite::{SqliteConfig, SqliteLocks};
use common::{Scratch, raw, runtime};

const CHILD: &str = "ALKSTORE_SQLITE_CHILD";
const FILE: &str = "ALKSTORE_SQLITE_FILE";
const ARG: &str = "ALKSTORE_SQLITE_ARG";

fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn config() -> SqliteConfig {
    SqliteConfig::new().with_waiter_heartbeat(Duration::from_millis(100))
}

/// A child process running `role` on `path`, and its `@@` lines.
struct Proc {
    child: Child,
    lines: BufReader<ChildStdout>,
}

impl Proc {
    fn spawn(role: &str, path: &std::path::Path, arg: &str) -> Proc {
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
    fn next(&mut self) -> String {
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
    fn go(&mut self) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(b"go\n").unwrap();
        stdin.flush().unwrap();
    }

    fn kill_9(&mut self) {
        // SIGKILL: no destructor, no clean-up, as a crash.
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    fn wait_ok(mut self) {
        let status = self.child.wait().unwrap();
        assert!(status.success(), "child failed: {status}");
    }
}

fn say(line: impl std::fmt::Display) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "@@{line}").unwrap();
    out.flush().unwrap();
}

/// The children's side: every other test of this file starts some.
#[test]
fn child() {
    let Ok(role) = std::env::var(CHILD) else {
        return;
    };
    let path = std::path::PathBuf::from(std::env::var(FILE).unwrap());
    let arg = std::env::var(ARG).unwrap_or_default();
    runtime().block_on(async move {
        let locks = alkstore_sqlite::open_with(&path, config()).await.unwrap();
        match role.as_str() {
            "cycles" => cycles(&locks, &arg).await,
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

#[test]
fn four_processes_200_cycles_on_4_names_never_overlap_and_tokens_follow_the_log() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    let log = dir.file("log");
    std::fs::write(&log, "").unwrap();
    runtime().block_on(async {
        drop(alkstore_sqlite::open(&path).await.unwrap());
    });
    let rounds = 200;
    let started = Instant::now();
    let procs: Vec<Proc> = (0..4)
        .map(|id| Proc::spawn("cycles", &path, &format!("{id},{},{rounds}", log.display())))
        .collect();
    for p in procs {
        p.wait_ok();
    }
    let took = started.elapsed();
    let text = std::fs::read_to_string(&log).unwrap();
    let mut inside: std::collections::HashMap<&str, (u64, &str)> = Default::default();
    let mut last: std::collections::HashMap<&str, u64> = Default::default();
    let mut all = std::collections::HashSet::new();
    let mut enters = 0;
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let (kind, name, token, who) = (f[0], f[1], f[2].parse::<u64>().unwrap(), f[3]);
        match kind {
            "enter" => {
                assert!(!inside.contains_key(name), "overlap on {name}: {line}");
                let prev = last.get(name).copied().unwrap_or(0);
                assert!(token > prev, "token {token} after {prev} on {name}");
                assert!(all.insert(token), "token {token} handed out twice");
                last.insert(name, token);
                inside.insert(name, (token, who));
                enters += 1;
            }
            "exit" => {
                assert_eq!(inside.remove(name), Some((token, who)), "{line}");
            }
            _ => panic!("{line}"),
        }
    }
    assert_eq!(enters, 4 * rounds);
    assert!(inside.is_empty());
    eprintln!(
        "4 processes x {rounds} cycles: {enters} leases in {took:?} ({:.0} µs per lease)",
        took.as_micros() as f64 / enters as f64
    );
}

#[test]
fn kill_9_of_the_holder_hands_the_lease_to_the_head_waiter_at_the_deadline() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    runtime().block_on(async {
        let locks = alkstore_sqlite::open_with(&path, config()).await.unwrap();
        let mut holder = Proc::spawn("hold", &path, "");
        let held = holder.next();
        let mut f = held.split(' ').skip(1);
        let token: u64 = f.next().unwrap().parse().unwrap();
        let deadline: u64 = f.next().unwrap().parse().unwrap();
        let waiting = tokio::spawn({
            let locks = locks.clone();
            async move {
                let lock = locks
                    .acquire("x", "parent", Duration::from_secs(30))
                    .timeout(Duration::from_secs(10))
                    .await;
                (lock, wall_ns())
            }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        holder.kill_9();
        let (lock, at) = waiting.await.unwrap();
        let lock = lock
            .unwrap()
            .expect("granted after the dead holder's deadline");
        assert!(lock.token() > token, "the token outlives the dead process");
        assert!(at >= deadline, "never before the deadline");
        let late = Duration::from_nanos(at - deadline);
        eprintln!("kill -9 of the holder: the head waiter got the lease {late:?} after the ttl");
        assert!(late < Duration::from_millis(1000), "{late:?}");
    });
}

#[test]
fn kill_9_of_a_waiter_is_skipped() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    runtime().block_on(async {
        let locks = alkstore_sqlite::open_with(&path, config()).await.unwrap();
        let held = locks
            .try_lock("y", "parent", Duration::from_secs(30))
            .await
            .unwrap()
            .unwrap();
        let mut waiter = Proc::spawn("wait", &path, "");
        waiter.next();
        while locks.snapshot().await.unwrap().waiting.is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let second = tokio::spawn({
            let locks = locks.clone();
            async move {
                locks
                    .acquire("y", "second", Duration::from_secs(30))
                    .timeout(Duration::from_secs(10))
                    .await
            }
        });
        while locks.snapshot().await.unwrap().waiting.len() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        waiter.kill_9();
        let killed = Instant::now();
        assert!(held.release().await.unwrap());
        let lock = second
            .await
            .unwrap()
            .unwrap()
            .expect("the dead waiter was skipped");
        assert_eq!(lock.owner(), "second");
        eprintln!(
            "kill -9 of a waiter: skipped, the next got the lease {:?} after the kill \
             (heartbeat 100 ms, skipped after 3)",
            killed.elapsed()
        );
    });
}

#[test]
fn kill_9_in_the_middle_of_a_write_transaction_leaves_a_working_file() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    runtime().block_on(async {
        let locks = alkstore_sqlite::open_with(&path, config()).await.unwrap();
        let before = locks
            .try_lock("a", "o", Duration::from_secs(30))
            .await
            .unwrap()
            .unwrap();
        let mut writer = Proc::spawn("tx", &path, "");
        writer.next();
        writer.kill_9();
        let ghost = locks
            .try_lock("ghost", "o", Duration::from_secs(30))
            .await
            .unwrap()
            .expect("the killed transaction's row never committed");
        assert!(ghost.token() > before.token());
        let check: String = raw(&path)
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
        assert!(before.release().await.unwrap());
    });
}

#[test]
fn kill_9_during_the_engines_own_transactions_leaves_a_working_file_and_growing_tokens() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    runtime().block_on(async {
        let locks = alkstore_sqlite::open_with(&path, config()).await.unwrap();
        let mut last = 0;
        for round in 0..5u64 {
            let mut churn = Proc::spawn("churn", &path, "");
            churn.next();
            // Somewhere in its stream of transactions.
            let seen: u64 = churn.next().split(' ').nth(1).unwrap().parse().unwrap();
            std::thread::sleep(Duration::from_millis(20 + 17 * round));
            churn.kill_9();
            assert!(seen > last);
            let lock = locks
                .acquire("churn", "parent", Duration::from_secs(30))
                .timeout(Duration::from_secs(5))
                .await
                .unwrap()
                .expect("granted at the latest when the dead child's lease lapses");
            assert!(
                lock.token() > seen,
                "round {round}: {} after {seen}",
                lock.token()
            );
            last = lock.token();
            assert!(lock.release().await.unwrap());
        }
        let check: String = raw(&path)
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
    });
}

#[test]
fn a_release_reaches_a_waiter_in_another_process_in_about_a_millisecond() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    let rounds = 30;
    runtime().block_on(async {
        let locks = alkstore_sqlite::open_with(&path, config()).await.unwrap();
        let mut child = Proc::spawn("latency", &path, &rounds.to_string());
        let mut latencies = Vec::new();
        for _ in 0..rounds {
            let lock = locks
                .try_lock("lat", "parent", Duration::from_secs(30))
                .await
                .unwrap()
                .expect("the child released and waits for the next round");
            child.go();
            // The child is queued.
            while locks.snapshot().await.unwrap().waiting.is_empty() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            let sent = wall_ns();
            assert!(lock.release().await.unwrap());
            let got: u64 = child.next().split(' ').nth(1).unwrap().parse().unwrap();
            latencies.push(Duration::from_nanos(got.saturating_sub(sent)));
            assert_eq!(child.next(), "released");
        }
        child.wait_ok();
        latencies.sort();
        let median = latencies[latencies.len() / 2];
        eprintln!(
            "release -> waiter in another process: median {median:?}, min {:?}, max {:?} ({rounds} rounds)",
            latencies[0],
            latencies[latencies.len() - 1]
        );
        assert!(median < Duration::from_millis(100), "{median:?}");
    });
}

#[test]
fn a_process_waiting_idle_costs_under_a_few_percent_of_a_core() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    let secs = std::env::var("ALKSTORE_SQLITE_IDLE_SECS").unwrap_or_else(|_| "5".into());
    runtime().block_on(async {
        let locks = alkstore_sqlite::open_with(&path, config()).await.unwrap();
        let _held = locks
            .try_lock("idle", "parent", Duration::from_secs(3600))
            .await
            .unwrap()
            .unwrap();
        let mut child = Proc::spawn("idle", &path, &secs);
        let cpu: f64 = child.next().split(' ').nth(1).unwrap().parse().unwrap();
        child.wait_ok();
        eprintln!("a process waiting {secs} s (heartbeat 100 ms): {cpu:.2}% of a core");
        assert!(cpu < 5.0, "{cpu}%");
    });
}
