//! What needs several processes: 4 contending, the wake-up of a waiter in another process,
//! the takeover after a holder is killed, and the CPU a waiting process costs. The children
//! are this binary run again (`contend`, `waiter`, `holder`); they answer on stdout.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::TTL;

/// The wall clock in ns (lease deadlines are on it, in µs, while it does not step back).
pub fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn spawn(args: &[&str], piped: bool) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(args);
    if piped {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
    }
    cmd.spawn().unwrap()
}

/// One of the contending processes: `cycles` acquire + release on `names` names.
pub async fn contender(path: &Path, id: usize, names: usize, cycles: u32) {
    let locks = alkstore_sqlite::open(path).await.unwrap();
    for i in 0..cycles as usize {
        let name = format!("c{}", (i + id) % names);
        let lock = locks
            .acquire(&name, "p", TTL)
            .timeout(Duration::from_secs(60));
        let lock = lock.await.unwrap().unwrap();
        assert!(lock.release().await.unwrap());
    }
}

/// 4 processes × `cycles` acquire + release on `names` names in one file: µs per lease.
pub fn contended(path: &Path, names: usize, cycles: u32) -> f64 {
    let started = Instant::now();
    let (p, n, c) = (
        path.display().to_string(),
        names.to_string(),
        cycles.to_string(),
    );
    let children: Vec<Child> = (0..4)
        .map(|id| spawn(&["contend", &p, &id.to_string(), &n, &c], false))
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    started.elapsed().as_secs_f64() * 1e6 / f64::from(4 * cycles)
}

/// CPU time (user + system) of this process in seconds, from /proc/self/stat.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split(' ').collect();
    let ticks = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    let out = Command::new("getconf").arg("CLK_TCK").output().unwrap();
    let hz: f64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(100.0);
    ticks as f64 / hz
}

/// The `waiter` child: `latency` mode: `n` times, waits for a line on stdin, acquires `lat`
/// and prints the wall clock when granted; `idle` mode: waits for a lease held for an hour
/// and prints the % of a core it used over `n` seconds.
pub async fn waiter(path: &Path, mode: &str, n: u64) {
    let locks = alkstore_sqlite::open(path).await.unwrap();
    if mode == "idle" {
        let waiting = locks.acquire("idle", "child", TTL);
        let measure = async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let (cpu, t) = (cpu_seconds(), Instant::now());
            tokio::time::sleep(Duration::from_secs(n)).await;
            let used = cpu_seconds() - cpu;
            println!("{}", 100.0 * used / t.elapsed().as_secs_f64());
        };
        tokio::select! {
            _ = waiting => panic!("granted while measuring"),
            () = measure => {}
        }
        return;
    }
    let mut stdin = std::io::stdin().lock().lines();
    for _ in 0..n {
        stdin.next().unwrap().unwrap();
        let lock = locks.acquire("lat", "child", TTL).await.unwrap().unwrap();
        println!("{}", wall_ns());
        lock.release().await.unwrap();
    }
}

/// Sorted durations: (median, min, max).
fn spread(mut d: Vec<Duration>) -> (Duration, Duration, Duration) {
    d.sort();
    (d[d.len() / 2], d[0], d[d.len() - 1])
}

/// Waits until `locks` shows somebody queued, then 20 ms more (so the waiter sleeps).
async fn queued(locks: &alkstore_sqlite::SqliteLocks) {
    while locks.snapshot().await.unwrap().waiting.is_empty() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
}

/// A release in this process -> the waiter in another process granted, `rounds` times.
pub async fn wakeup_latency(path: &Path, rounds: u64) -> (Duration, Duration, Duration) {
    let locks = alkstore_sqlite::open(path).await.unwrap();
    let p = path.display().to_string();
    let mut child = spawn(&["waiter", &p, "latency", &rounds.to_string()], true);
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut latencies = Vec::new();
    for _ in 0..rounds {
        let lock = loop {
            // The child releases right after it reports: wait for that.
            if let Some(lock) = locks.try_lock("lat", "parent", TTL).await.unwrap() {
                break lock;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        stdin.write_all(b"go\n").unwrap();
        stdin.flush().unwrap();
        queued(&locks).await;
        let sent = wall_ns();
        assert!(lock.release().await.unwrap());
        let got: u64 = out.next().unwrap().unwrap().trim().parse().unwrap();
        latencies.push(Duration::from_nanos(got.saturating_sub(sent)));
    }
    assert!(child.wait().unwrap().success());
    spread(latencies)
}

/// The `holder` child: takes `x` for `ms` milliseconds, prints its deadline (ns), sleeps.
pub async fn holder(path: &Path, ms: u64) {
    let locks = alkstore_sqlite::open(path).await.unwrap();
    let lock = locks
        .try_lock("x", "holder", Duration::from_millis(ms))
        .await;
    let lock = lock.unwrap().expect("x is free");
    println!("{}", lock.deadline().as_nanos());
    std::future::pending::<()>().await;
}

/// `kill -9` of a holder whose lease has `ms` left; how long after its deadline the head
/// waiter (this process) is granted, `rounds` times.
pub async fn takeover(path: &Path, ms: u64, rounds: usize) -> (Duration, Duration, Duration) {
    let locks = alkstore_sqlite::open(path).await.unwrap();
    let p = path.display().to_string();
    let mut late = Vec::new();
    for _ in 0..rounds {
        let mut child = spawn(&["holder", &p, &ms.to_string()], true);
        let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
        let deadline: u64 = out.next().unwrap().unwrap().trim().parse().unwrap();
        let waiting = locks
            .acquire("x", "waiter", TTL)
            .timeout(Duration::from_secs(10));
        let waiting = tokio::spawn(async move {
            let lock = waiting.await;
            (lock, wall_ns())
        });
        tokio::time::sleep(Duration::from_millis(ms / 4)).await;
        child.kill().unwrap();
        child.wait().unwrap();
        let (lock, at) = waiting.await.unwrap();
        let lock = lock
            .unwrap()
            .expect("granted after the dead holder's deadline");
        assert!(at >= deadline, "granted before the dead holder's deadline");
        late.push(Duration::from_nanos(at - deadline));
        assert!(lock.release().await.unwrap());
    }
    spread(late)
}

/// A process waiting (default config) behind a lease held for an hour: % of a core.
pub async fn idle_cpu(path: &Path, secs: u64) -> f64 {
    let locks = alkstore_sqlite::open(path).await.unwrap();
    let hour = Duration::from_secs(3600);
    let _held = locks
        .try_lock("idle", "parent", hour)
        .await
        .unwrap()
        .unwrap();
    let p = path.display().to_string();
    let mut cmd = tokio::process::Command::new(std::env::current_exe().unwrap());
    let out = cmd.args(["waiter", &p, "idle", &secs.to_string()]).output();
    let out = out.await.unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}
