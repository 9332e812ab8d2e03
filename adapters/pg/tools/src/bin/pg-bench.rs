//! `make bench-pg`: the cost of a lock on PostgreSQL, against two baselines measured in the
//! same run on the same cluster, over one connection each.
//!
//! - Round trip: `try_lock` + `release` on one name, one at a time. Baseline 1 is the lease
//!   row people hand-roll (what ShedLock-style libraries do): `INSERT .. ON CONFLICT DO UPDATE
//!   .. WHERE deadline < clock_timestamp() RETURNING`, then a compare-and-delete; ours adds
//!   fencing tokens taken after the row lock, the FIFO queue, the never-back floor and the io
//!   timeout. Baseline 2 is the floor: `pg_try_advisory_lock` / `pg_advisory_unlock` (no ttl,
//!   no token, tied to one session). Rounds alternate, and the medians are compared.
//!   Target: at most 1.2x the hand-rolled lease row.
//! - Throughput: 16 tasks on a pool of 4 connections, each task on its own name (the
//!   engine's pool shares and pipelines its connections); the hand-rolled row with 16 tasks
//!   on 4 connections checked out one call at a time.
//!
//! Durability is the same on every side: the engine's sessions run with
//! `synchronous_commit = on` (a grant is answered once it is flushed, so tokens never repeat
//! after a crash), so the baselines' connections do too (PostgreSQL's default; the throwaway
//! cluster of `make bench-pg` is started with `off` for the tests' speed). `BENCH_PG_ASYNC=1`
//! leaves the baselines on the cluster's setting instead, to see the cost of that.
//!
//! The server's `fsync` decides what a commit costs: `make bench-pg` runs this twice, on a
//! cluster with `fsync = off` (as the tests run it: the cost is the server's CPU per
//! statement) and on one with `fsync = on` (PostgreSQL's default and a production server's:
//! the cost is mostly the WAL flushes, and the engine's release that grants nothing does not
//! wait for its flush). The header says which one ran; the CPU rows give each side's user +
//! system time, server and client, read from `/proc` (the cluster runs on this machine).
//!
//! Needs `ALKSTORE_PG_URL` (set by `make bench-pg`, which starts a throwaway cluster). Built
//! in this separate package so that alkstore-pg is the plain build (no `test-clock`); it
//! checks that too.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alkstore_pg::{PgConfig, PgLocks};
use tokio::sync::Semaphore;
use tokio_postgres::{Client, Statement};

const TTL: Duration = Duration::from_secs(30);
const ROUNDS: usize = 11;
const PER_ROUND: u32 = 1_000;
const TASKS: usize = 16;
const POOL: usize = 4;
const PER_TASK: u32 = 500;

async fn client(url: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    if std::env::var_os("BENCH_PG_ASYNC").is_none() {
        client
            .batch_execute("SET synchronous_commit = on")
            .await
            .unwrap();
    }
    client
}

/// The hand-rolled lease row on one connection, its statements prepared.
struct Row {
    client: Client,
    take: Statement,
    give: Statement,
}

impl Row {
    async fn new(url: &str, table: &str) -> Row {
        let client = client(url).await;
        let take = client
            .prepare(&format!(
                "INSERT INTO {table} AS l (name, owner, deadline)
                 VALUES ($1, $2, clock_timestamp() + make_interval(secs => $3))
                 ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, deadline = EXCLUDED.deadline
                 WHERE l.deadline < clock_timestamp()
                 RETURNING name"
            ))
            .await
            .unwrap();
        let give = client
            .prepare(&format!(
                "DELETE FROM {table} WHERE name = $1 AND owner = $2"
            ))
            .await
            .unwrap();
        Row { client, take, give }
    }

    async fn cycle(&self, name: &str, owner: &str) {
        let secs = TTL.as_secs_f64();
        let got = self
            .client
            .query_opt(&self.take, &[&name, &owner, &secs])
            .await
            .unwrap();
        assert!(got.is_some());
        assert_eq!(
            self.client
                .execute(&self.give, &[&name, &owner])
                .await
                .unwrap(),
            1
        );
    }
}

/// How many times the server wrote WAL out so far (`pg_stat_wal`, PostgreSQL 14 and later;
/// 0 before): a commit that waits for its flush writes once, an asynchronous one leaves the
/// write to the WAL writer, which batches many.
async fn wal_writes(admin: &Client) -> i64 {
    admin
        .query_opt("SELECT wal_write FROM pg_stat_wal", &[])
        .await
        .ok()
        .flatten()
        .map_or(0, |row| row.get(0))
}

/// CPU seconds (user + system) used so far by process `pid` (the server's backends run on this
/// machine: `make bench-pg` starts the cluster here), from `/proc/<pid>/stat`; 0 elsewhere.
fn cpu_secs(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // After the command name (which may hold spaces), field 3 (state) comes first: utime
    // and stime, fields 14 and 15, are the 12th and 13th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / clock_ticks()
}

/// Clock ticks per second of `/proc`'s CPU times (`getconf CLK_TCK`; 100 on Linux).
fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// The server process ids of every connection named `app` (the engine names its own
/// `alkstore-pg`).
async fn backends(admin: &Client, app: &str) -> Vec<u32> {
    admin
        .query(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1",
            &[&app],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get::<_, i32>(0) as u32)
        .collect()
}

/// CPU seconds used so far by the server processes `pids` together.
fn server_cpu(pids: &[u32]) -> f64 {
    pids.iter().map(|&pid| cpu_secs(pid)).sum()
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn per_cycle_us(start: Instant, cycles: u32) -> f64 {
    start.elapsed().as_secs_f64() * 1e6 / f64::from(cycles)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let url = std::env::var("ALKSTORE_PG_URL")
        .expect("ALKSTORE_PG_URL is not set: run `make bench-pg`, which starts a cluster");
    let schema = format!("bench{}", std::process::id());
    let one = PgLocks::connect_with(&url, PgConfig::new().with_schema(&schema).with_pool_size(1))
        .await
        .unwrap();
    let admin = client(&url).await;
    let table = format!("\"{schema}\".lease_row");
    admin
        .batch_execute(&format!(
            "CREATE TABLE {table} (name text PRIMARY KEY, owner text NOT NULL, deadline timestamptz NOT NULL)"
        ))
        .await
        .unwrap();

    // This is a plain build: the schema's functions read the server's clock only.
    let clock: String = admin
        .query_one(&format!("SELECT clock FROM \"{schema}\".meta"), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(clock, "server", "the bench must run the plain build");

    let row = Row::new(&url, &table).await;
    row.client
        .batch_execute("SET application_name = 'bench-lease-row'")
        .await
        .unwrap();
    let advisory = client(&url).await;
    let try_adv = advisory
        .prepare("SELECT pg_try_advisory_lock($1)")
        .await
        .unwrap();
    let unlock_adv = advisory
        .prepare("SELECT pg_advisory_unlock($1)")
        .await
        .unwrap();
    let key = 4242i64;

    // Warm up all three (plans, caches, connections).
    for _ in 0..300 {
        let lock = one.try_lock("rt", "me", TTL).await.unwrap().unwrap();
        assert!(lock.release().await.unwrap());
        row.cycle("rt", "me").await;
        let got: bool = advisory.query_one(&try_adv, &[&key]).await.unwrap().get(0);
        assert!(got);
        let _ = advisory.query_one(&unlock_adv, &[&key]).await.unwrap();
    }

    // Server CPU: the engine's connections (its pool of one, its LISTEN connection) and the
    // baseline's one; client CPU: this process, during each side's rounds only.
    let ours_pids = backends(&admin, "alkstore-pg").await;
    let row_pids = backends(&admin, "bench-lease-row").await;
    let me = std::process::id();
    let (mut ours_cpu, mut rows_cpu) = ([0.0; 2], [0.0; 2]);
    let (mut ours, mut rows, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ours_wal, mut rows_wal) = (0, 0);
    for _ in 0..ROUNDS {
        let before = wal_writes(&admin).await;
        let (server, client) = (server_cpu(&ours_pids), cpu_secs(me));
        let start = Instant::now();
        for _ in 0..PER_ROUND {
            let lock = one.try_lock("rt", "me", TTL).await.unwrap().unwrap();
            assert!(lock.release().await.unwrap());
        }
        ours.push(per_cycle_us(start, PER_ROUND));
        ours_cpu[0] += server_cpu(&ours_pids) - server;
        ours_cpu[1] += cpu_secs(me) - client;
        let between = wal_writes(&admin).await;
        let (server, client) = (server_cpu(&row_pids), cpu_secs(me));
        let start = Instant::now();
        for _ in 0..PER_ROUND {
            row.cycle("rt", "me").await;
        }
        rows.push(per_cycle_us(start, PER_ROUND));
        rows_cpu[0] += server_cpu(&row_pids) - server;
        rows_cpu[1] += cpu_secs(me) - client;
        let after = wal_writes(&admin).await;
        ours_wal += between - before;
        rows_wal += after - between;
        let start = Instant::now();
        for _ in 0..PER_ROUND {
            let got: bool = advisory.query_one(&try_adv, &[&key]).await.unwrap().get(0);
            assert!(got);
            let _ = advisory.query_one(&unlock_adv, &[&key]).await.unwrap();
        }
        floor.push(per_cycle_us(start, PER_ROUND));
    }
    let (ours_us, row_us, floor_us) = (median(ours), median(rows), median(floor));
    let ratio = ours_us / row_us;

    // Throughput: 16 tasks on a pool of 4.
    let pooled = PgLocks::connect_with(
        &url,
        PgConfig::new().with_schema(&schema).with_pool_size(POOL),
    )
    .await
    .unwrap();
    let start = Instant::now();
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let locks = pooled.clone();
            tokio::spawn(async move {
                let name = format!("tp{t}");
                for _ in 0..PER_TASK {
                    let lock = locks.try_lock(&name, "me", TTL).await.unwrap().unwrap();
                    assert!(lock.release().await.unwrap());
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let ours_tp = f64::from(PER_TASK) * TASKS as f64 / start.elapsed().as_secs_f64();
    let mut conns = Vec::new();
    for _ in 0..POOL {
        conns.push(Row::new(&url, &table).await);
    }
    let idle = Arc::new(Mutex::new(conns));
    let permits = Arc::new(Semaphore::new(POOL));
    let start = Instant::now();
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let (idle, permits) = (Arc::clone(&idle), Arc::clone(&permits));
            tokio::spawn(async move {
                let name = format!("tp{t}");
                for _ in 0..PER_TASK {
                    let permit = permits.acquire().await.unwrap();
                    let conn = idle.lock().unwrap().pop().unwrap();
                    conn.cycle(&name, "me").await;
                    idle.lock().unwrap().push(conn);
                    drop(permit);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let row_tp = f64::from(PER_TASK) * TASKS as f64 / start.elapsed().as_secs_f64();
    admin
        .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .await
        .unwrap();

    let fsync: String = admin.query_one("SHOW fsync", &[]).await.unwrap().get(0);
    let durability = if std::env::var_os("BENCH_PG_ASYNC").is_none() {
        "synchronous_commit = on everywhere"
    } else {
        "baselines on the cluster's synchronous_commit, the engine on"
    };
    println!(
        "## alkstore-pg bench: server fsync = {fsync} (one throwaway cluster on localhost, {ROUNDS} alternating rounds of {PER_ROUND}, medians; {durability})"
    );
    println!();
    println!("| what | alkstore-pg | baseline | ours / baseline |");
    println!("|---|---|---|---|");
    println!(
        "| try_lock + release vs hand-rolled lease row (INSERT .. ON CONFLICT .. WHERE deadline < clock_timestamp(), compare-and-delete) | {ours_us:.1} µs | {row_us:.1} µs | {ratio:.3}x |"
    );
    println!(
        "| try_lock + release vs pg_try_advisory_lock + pg_advisory_unlock (the floor: no ttl, no token) | {ours_us:.1} µs | {floor_us:.1} µs | {:.3}x |",
        ours_us / floor_us
    );
    let cycles = f64::from(PER_ROUND) * ROUNDS as f64;
    println!(
        "| WAL writes per try_lock + release (pg_stat_wal; each flushed commit writes once) | {:.2} | {:.2} | |",
        ours_wal as f64 / cycles,
        rows_wal as f64 / cycles
    );
    let us = |secs: f64| secs * 1e6 / cycles;
    println!(
        "| server CPU per try_lock + release (the backends' user + system time, /proc) | {:.1} µs | {:.1} µs | {:.3}x |",
        us(ours_cpu[0]),
        us(rows_cpu[0]),
        ours_cpu[0] / rows_cpu[0]
    );
    println!(
        "| client CPU per try_lock + release (this process, tokio and tokio-postgres included) | {:.1} µs | {:.1} µs | {:.3}x |",
        us(ours_cpu[1]),
        us(rows_cpu[1]),
        ours_cpu[1] / rows_cpu[1]
    );
    println!(
        "| throughput, {TASKS} tasks on a pool of {POOL} (cycles/s; baseline: the lease row, 4 connections checked out per call) | {ours_tp:.0} /s | {row_tp:.0} /s | {:.3}x the time |",
        row_tp / ours_tp
    );
    println!();
    let verdict = if ratio <= 1.2 { "within" } else { "OVER" };
    println!(
        "fsync = {fsync}: round-trip ratio against the hand-rolled lease row {ratio:.3}x: {verdict} the 1.2x target"
    );
}
