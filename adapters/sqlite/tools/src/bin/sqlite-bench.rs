//! `make bench-sqlite`: try_lock + release on the SQLite engine against, in the same run and
//! on the same kind of file (WAL, the same `synchronous` setting):
//! - a hand-rolled lease row: `INSERT .. ON CONFLICT DO UPDATE .. WHERE deadline < now` in
//!   `BEGIN IMMEDIATE`, then a compare-and-free `UPDATE .. WHERE token = ?`, called directly
//!   on a connection (no thread hop, no async, no FIFO, no fencing, no clock floor);
//! - the same hand-rolled row called from async code through `spawn_blocking`, as an async
//!   program would have to;
//! - `flock` on a file (the floor: no ttl, no token, no queue);
//!
//! for `synchronous = NORMAL` (the engine's default) and `FULL`, then 4 OS processes
//! contending (acquire + release on one name, and on 4 names). Prints µs per cycle and the
//! ratios; asserts nothing.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use alkstore_sqlite::{SqliteConfig, Synchronous};
use rusqlite::{Connection, TransactionBehavior};

const TTL: Duration = Duration::from_secs(30);

fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64
}

/// The hand-rolled lease row.
struct Row(Connection);

impl Row {
    fn open(path: &Path, sync: &str) -> Row {
        let conn = Connection::open(path).unwrap();
        conn.busy_timeout(Duration::from_secs(5)).unwrap();
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = {sync};
             CREATE TABLE IF NOT EXISTS lease (name TEXT PRIMARY KEY, owner TEXT,
                 token INTEGER NOT NULL, deadline INTEGER NOT NULL) WITHOUT ROWID;"
        ))
        .unwrap();
        Row(conn)
    }

    fn try_lock(&mut self, name: &str, owner: &str) -> Option<i64> {
        let tx = self
            .0
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        let now = now_us();
        let token = tx
            .prepare_cached(
                "INSERT INTO lease VALUES (?1, ?2, 1, ?3) ON CONFLICT (name) DO UPDATE
                 SET owner = excluded.owner, token = token + 1, deadline = excluded.deadline
                 WHERE deadline < ?4 RETURNING token",
            )
            .unwrap()
            .query_row((name, owner, now + TTL.as_micros() as i64, now), |r| {
                r.get(0)
            })
            .ok();
        tx.commit().unwrap();
        token
    }

    fn release(&mut self, name: &str, token: i64) -> bool {
        let tx = self
            .0
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        let n = tx
            .prepare_cached(
                "UPDATE lease SET owner = NULL, deadline = 0 WHERE name = ?1 AND token = ?2",
            )
            .unwrap()
            .execute((name, token))
            .unwrap();
        tx.commit().unwrap();
        n == 1
    }
}

fn per_op(started: Instant, n: u32) -> f64 {
    started.elapsed().as_secs_f64() * 1e6 / f64::from(n)
}

/// The variants of one run, each on a file of its own, opened once; `round` runs `n` cycles
/// of each in turn, so that a machine busy with something else slows all of them alike.
struct Variants {
    engine: alkstore_sqlite::SqliteLocks,
    protocol: alkstore_sqlite::Sqlite,
    row: Row,
    blocking: std::sync::Arc<std::sync::Mutex<Row>>,
    flock: std::fs::File,
    /// µs summed per variant: engine, protocol, row direct, row spawn_blocking, flock.
    spent: [f64; 5],
    cycles: u32,
}

impl Variants {
    async fn open(dir: &Path, sync: Synchronous, name: &str) -> Variants {
        let config = SqliteConfig::new().with_synchronous(sync);
        Variants {
            engine: alkstore_sqlite::open_with(
                dir.join(format!("engine-{name}.db")),
                config.clone(),
            )
            .await
            .unwrap(),
            protocol: alkstore_sqlite::Sqlite::open(
                dir.join(format!("protocol-{name}.db")),
                config,
            )
            .await
            .unwrap(),
            row: Row::open(&dir.join(format!("row-{name}.db")), name),
            blocking: std::sync::Arc::new(std::sync::Mutex::new(Row::open(
                &dir.join(format!("rowb-{name}.db")),
                name,
            ))),
            flock: std::fs::File::create(dir.join(format!("flock-{name}"))).unwrap(),
            spent: [0.0; 5],
            cycles: 0,
        }
    }

    /// Runs `n` cycles of each variant, starting with variant `first` (the order rotates from
    /// round to round: with `synchronous = FULL` the first one after the others' fsyncs is
    /// measurably luckier).
    async fn round(&mut self, n: u32, first: usize) {
        use alkstore_kit::Protocol;
        for k in 0..5 {
            let variant = (first + k) % 5;
            let t = Instant::now();
            match variant {
                0 => {
                    for _ in 0..n {
                        let lock = self
                            .engine
                            .try_lock("bench", "me", TTL)
                            .await
                            .unwrap()
                            .unwrap();
                        assert!(lock.release().await.unwrap());
                    }
                }
                1 => {
                    for _ in 0..n {
                        let p = &self.protocol;
                        let grant = p
                            .try_lock("bench", "me", TTL, "r")
                            .await
                            .unwrap()
                            .value
                            .unwrap();
                        assert!(p.release("bench", grant.token, "r").await.unwrap());
                    }
                }
                2 => {
                    for _ in 0..n {
                        let token = self.row.try_lock("bench", "me").unwrap();
                        assert!(self.row.release("bench", token));
                    }
                }
                3 => {
                    for _ in 0..n {
                        let r = self.blocking.clone();
                        let token = tokio::task::spawn_blocking(move || {
                            r.lock().unwrap().try_lock("bench", "me")
                        })
                        .await
                        .unwrap()
                        .unwrap();
                        let r = self.blocking.clone();
                        let released = tokio::task::spawn_blocking(move || {
                            r.lock().unwrap().release("bench", token)
                        })
                        .await
                        .unwrap();
                        assert!(released);
                    }
                }
                _ => {
                    for _ in 0..n {
                        self.flock.try_lock().unwrap();
                        self.flock.unlock().unwrap();
                    }
                }
            }
            self.spent[variant] += t.elapsed().as_secs_f64() * 1e6;
        }
        self.cycles += n;
    }

    fn per_op(&self, i: usize) -> f64 {
        self.spent[i] / f64::from(self.cycles)
    }
}

/// One of 4 contending processes: `cycles` acquire + release on `names` names.
async fn contender(path: &Path, id: usize, names: usize, cycles: u32) {
    let locks = alkstore_sqlite::open(path).await.unwrap();
    for i in 0..cycles as usize {
        let name = format!("c{}", (i + id) % names);
        let lock = locks
            .acquire(&name, "p", TTL)
            .timeout(Duration::from_secs(60))
            .await
            .unwrap()
            .unwrap();
        assert!(lock.release().await.unwrap());
    }
}

fn contended(path: &Path, names: usize, cycles: u32) -> f64 {
    let started = Instant::now();
    let children: Vec<_> = (0..4)
        .map(|id| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "contend",
                    &path.display().to_string(),
                    &id.to_string(),
                    &names.to_string(),
                    &cycles.to_string(),
                ])
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    per_op(started, 4 * cycles)
}

fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// CPU time (user + system) of this process in seconds, from /proc/self/stat (at 100 Hz).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split(' ').collect();
    (f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()) as f64 / 100.0
}

/// The waiting child of the wake-up measures: `rounds` times, waits for a line on stdin, then
/// acquires `lat` and prints the wall clock when granted; or (`idle`) waits for a lease held
/// for an hour and prints its CPU use over `secs`.
async fn waiter(path: &Path, mode: &str, n: u64) {
    use std::io::BufRead;
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

/// Release in this process -> grant in another: the median, min and max over `rounds`.
async fn wakeup_latency(path: &Path, rounds: u64) -> (Duration, Duration, Duration) {
    use std::io::{BufRead, Write};
    let locks = alkstore_sqlite::open(path).await.unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "waiter",
            &path.display().to_string(),
            "latency",
            &rounds.to_string(),
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
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
        while locks.snapshot().await.unwrap().waiting.is_empty() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        let sent = wall_ns();
        assert!(lock.release().await.unwrap());
        let got: u64 = out.next().unwrap().unwrap().trim().parse().unwrap();
        latencies.push(Duration::from_nanos(got.saturating_sub(sent)));
    }
    assert!(child.wait().unwrap().success());
    latencies.sort();
    (
        latencies[latencies.len() / 2],
        latencies[0],
        latencies[latencies.len() - 1],
    )
}

/// A process waiting (default config) behind a lease held for an hour: % of a core.
async fn idle_cpu(path: &Path, secs: u64) -> f64 {
    let locks = alkstore_sqlite::open(path).await.unwrap();
    let _held = locks
        .try_lock("idle", "parent", Duration::from_secs(3600))
        .await
        .unwrap()
        .unwrap();
    let out = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "waiter",
            &path.display().to_string(),
            "idle",
            &secs.to_string(),
        ])
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    if args.get(1).map(String::as_str) == Some("waiter") {
        runtime.block_on(waiter(
            Path::new(&args[2]),
            &args[3],
            args[4].parse().unwrap(),
        ));
        return;
    }
    if args.get(1).map(String::as_str) == Some("contend") {
        let (id, names, cycles) = (
            args[3].parse().unwrap(),
            args[4].parse().unwrap(),
            args[5].parse().unwrap(),
        );
        runtime.block_on(contender(Path::new(&args[2]), id, names, cycles));
        return;
    }
    let n: u32 = std::env::var("BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let scratch = alkstore_sqlite_tools::Scratch::new("bench");
    let dir = &scratch.0;
    println!("try_lock + release, µs per cycle (WAL; each variant on a file of its own; the");
    println!(
        "variants take turns in 10 rounds, in a rotating order, so that other load on the machine"
    );
    println!("and the disk hit all alike)");
    println!();
    println!(
        "| synchronous | cycles | alkstore-sqlite | hand-rolled row (direct) | ratio | hand-rolled row (spawn_blocking) | ratio | engine without the kit | flock | ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (sync, name) in [(Synchronous::Normal, "NORMAL"), (Synchronous::Full, "FULL")] {
        let n = if name == "FULL" { n / 10 } else { n };
        runtime.block_on(async {
            let mut v = Variants::open(dir, sync, name).await;
            v.round(n / 20, 0).await; // warm-up, not counted
            v.spent = [0.0; 5];
            v.cycles = 0;
            for round in 0..10 {
                v.round(n / 10, round).await;
            }
            let (ours, row, blocking) = (v.per_op(0), v.per_op(2), v.per_op(3));
            println!(
                "| {name} | {} | {ours:.1} | {row:.1} | {:.2}x | {blocking:.1} | {:.2}x | {:.1} | {:.2} | {:.0}x |",
                v.cycles,
                ours / row,
                ours / blocking,
                v.per_op(1),
                v.per_op(4),
                ours / v.per_op(4)
            );
        });
    }
    println!();
    let cycles = n / 10;
    let one = contended(&dir.join("contend-1.db"), 1, cycles);
    let four = contended(&dir.join("contend-4.db"), 4, cycles);
    println!(
        "4 processes contending, {cycles} acquire + release each (FIFO hand-off between processes):"
    );
    println!("| names | µs per lease | leases/s |");
    println!("|---|---|---|");
    println!("| 1 | {one:.1} | {:.0} |", 1e6 / one);
    println!("| 4 | {four:.1} | {:.0} |", 1e6 / four);
    println!();
    let (median, min, max) = runtime.block_on(wakeup_latency(&dir.join("wakeup.db"), 50));
    println!(
        "wake-up: a release in this process -> the waiter in another process granted: median \
         {median:?} (min {min:?}, max {max:?}, 50 rounds; the release's own transaction included)"
    );
    let secs = std::env::var("IDLE_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let cpu = runtime.block_on(idle_cpu(&dir.join("idle.db"), secs));
    println!(
        "idle: a process waiting behind a lease held for an hour (default config: 1 s heartbeat): \
         {cpu:.2}% of a core over {secs} s (/proc/self/stat)"
    );
}
