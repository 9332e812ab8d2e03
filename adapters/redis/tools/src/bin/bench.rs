//! `make bench-redis`: the cost of a lock on Redis, against a hand-rolled Redis lock in the
//! same run, with the in-memory engine alongside for scale.
//!
//! - Round trip: `try_lock` + `release` on one name, one at a time. The baseline is what
//!   bsm/redislock does: `SET key token NX PX ttl`, then a compare-and-delete script; ours adds
//!   fencing tokens, server time, the FIFO queue check and the io timeout. Rounds alternate
//!   between the two, and the medians are compared. Target: at most 1.15x.
//! - Throughput: 16 tasks sharing one connection, each on its own name.
//! - Replica ack: with `ALKSTORE_BENCH_REPLICA_PORT` set (`make bench-redis` sets it), a
//!   replica of the server is started on that port once the rows above are measured (scratch
//!   dir, no persistence, killed by pid at the end), and rounds of a second store with
//!   `with_replica_ack(1, 1 s)` (`WAIT 1` after the grant) alternate with rounds of the first,
//!   both with the replica attached.
//!
//! Needs `ALKSTORE_REDIS_URL` (set by `make bench-redis`, which starts a scratch server). Built
//! in this separate package so that alkstore-redis is the plain build (no `test-clock`); it
//! checks that too.

use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore_mem::{LockRegistry, ManualClock};
use alkstore_redis::{RedisConfig, RedisLocks};
use redis::aio::ConnectionManager;

const TTL: Duration = Duration::from_secs(30);
const ROUNDS: usize = 15;
const PER_ROUND: u32 = 1_500;
const TASKS: usize = 16;
const PER_TASK: u32 = 2_000;

/// The hand-rolled lock: SET NX PX to take, compare-and-delete to release.
#[derive(Clone)]
struct Baseline {
    conn: ConnectionManager,
    release: Arc<redis::Script>,
    take: Arc<redis::Script>,
}

impl Baseline {
    /// The floor of any lock that reads the server's clock in a script: the same lock, taken
    /// by a two-line script (TIME, then SET NX PX) instead of a plain SET.
    async fn try_lock_scripted(&self, key: &str, token: &str) -> bool {
        let mut conn = self.conn.clone();
        let reply: Option<String> = self
            .take
            .key(key)
            .arg(token)
            .arg(TTL.as_millis() as u64)
            .invoke_async(&mut conn)
            .await
            .unwrap();
        reply.is_some()
    }

    async fn try_lock(&self, key: &str, token: &str) -> bool {
        let mut conn = self.conn.clone();
        let reply: Option<String> = redis::cmd("SET")
            .arg(key)
            .arg(token)
            .arg("NX")
            .arg("PX")
            .arg(TTL.as_millis() as u64)
            .query_async(&mut conn)
            .await
            .unwrap();
        reply.is_some()
    }

    async fn release(&self, key: &str, token: &str) -> bool {
        let mut conn = self.conn.clone();
        let n: i64 = self
            .release
            .key(key)
            .arg(token)
            .invoke_async(&mut conn)
            .await
            .unwrap();
        n == 1
    }
}

/// A replica of the bench's server, killed by pid when dropped (also on a panic).
struct Replica {
    pid: u32,
    dir: std::path::PathBuf,
}

impl Replica {
    fn start(port: u16, master: &str) -> Replica {
        let (host, master_port) = master
            .trim_start_matches("redis://")
            .trim_end_matches('/')
            .rsplit_once(':')
            .expect("ALKSTORE_REDIS_URL is redis://host:port/");
        let dir =
            std::env::temp_dir().join(format!("alkstore-bench-replica-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pidfile = dir.join("redis.pid");
        let status = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--replicaof", host, master_port])
            .arg("--dir")
            .arg(&dir)
            .args(["--save", "", "--appendonly", "no", "--daemonize", "yes"])
            .arg("--pidfile")
            .arg(&pidfile)
            .arg("--logfile")
            .arg(dir.join("redis.log"))
            .status()
            .expect("redis-server runs");
        assert!(status.success());
        let start = Instant::now();
        let pid = loop {
            if let Some(pid) = std::fs::read_to_string(&pidfile)
                .ok()
                .and_then(|p| p.trim().parse().ok())
            {
                break pid;
            }
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "the replica did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        Replica { pid, dir }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .arg(self.pid.to_string())
            .status();
        let stat = format!("/proc/{}/stat", self.pid);
        for _ in 0..100 {
            if !std::path::Path::new(&stat).exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One round of `try_lock` + `release` on `name`: µs per cycle.
async fn engine_round(locks: &RedisLocks, name: &str) -> f64 {
    let start = Instant::now();
    for _ in 0..PER_ROUND {
        let lock = locks.try_lock(name, "me", TTL).await.unwrap().unwrap();
        assert!(lock.release().await.unwrap());
    }
    start.elapsed().as_secs_f64() * 1e6 / f64::from(PER_ROUND)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let url = std::env::var("ALKSTORE_REDIS_URL")
        .expect("ALKSTORE_REDIS_URL is not set: run `make bench-redis`, which starts a server");
    let ns = format!("bench{}", std::process::id());
    let locks = RedisLocks::connect_with(&url, RedisConfig::new().with_namespace(&ns))
        .await
        .unwrap();
    let client = redis::Client::open(url.as_str()).unwrap();
    let baseline = Baseline {
        conn: ConnectionManager::new(client).await.unwrap(),
        release: Arc::new(redis::Script::new(
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end",
        )),
        take: Arc::new(redis::Script::new(
            "redis.call('TIME') return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])",
        )),
    };
    let key = format!("{{{ns}}}:baseline");

    // This is a plain build: the scripts never read the test clock's offset. Set one of an
    // hour; deadlines still follow the server's TIME.
    let mut conn = baseline.conn.clone();
    let _: () = redis::cmd("SET")
        .arg(format!("{{{ns}}}:offset"))
        .arg(3_600_000_000u64)
        .query_async(&mut conn)
        .await
        .unwrap();
    let plain = locks.try_lock("plain", "me", TTL).await.unwrap().unwrap();
    let unix = std::time::UNIX_EPOCH.elapsed().unwrap();
    let ahead = plain.deadline().as_duration().saturating_sub(unix);
    assert!(
        ahead < TTL + Duration::from_secs(5),
        "a plain build read the test offset: {ahead:?}"
    );
    plain.release().await.unwrap();

    // Warm up both (script caches, connections).
    for i in 0..500 {
        let lock = locks.try_lock("rt", "me", TTL).await.unwrap().unwrap();
        assert!(lock.release().await.unwrap());
        let token = i.to_string();
        assert!(baseline.try_lock(&key, &token).await);
        assert!(baseline.release(&key, &token).await);
    }

    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    let mut floor = Vec::new();
    for _ in 0..ROUNDS {
        ours.push(engine_round(&locks, "rt").await);
        let start = Instant::now();
        for i in 0..PER_ROUND {
            let token = i.to_string();
            assert!(baseline.try_lock(&key, &token).await);
            assert!(baseline.release(&key, &token).await);
        }
        theirs.push(start.elapsed().as_secs_f64() * 1e6 / f64::from(PER_ROUND));
        let start = Instant::now();
        for i in 0..PER_ROUND {
            let token = i.to_string();
            assert!(baseline.try_lock_scripted(&key, &token).await);
            assert!(baseline.release(&key, &token).await);
        }
        floor.push(start.elapsed().as_secs_f64() * 1e6 / f64::from(PER_ROUND));
    }
    let (ours_us, theirs_us, floor_us) = (median(ours), median(theirs), median(floor));
    let ratio = ours_us / theirs_us;

    // Throughput: 16 tasks on one connection.
    let start = Instant::now();
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let locks = locks.clone();
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
    let start = Instant::now();
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let baseline = baseline.clone();
            let key = format!("{{{ns}}}:tp{t}");
            tokio::spawn(async move {
                for i in 0..PER_TASK {
                    let token = i.to_string();
                    assert!(baseline.try_lock(&key, &token).await);
                    assert!(baseline.release(&key, &token).await);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let theirs_tp = f64::from(PER_TASK) * TASKS as f64 / start.elapsed().as_secs_f64();

    // In memory, for scale.
    let registry = LockRegistry::new(ManualClock::new());
    let n = 1_000_000u32;
    let start = Instant::now();
    for _ in 0..n {
        let lock = registry.try_lock("rt", "me", TTL).unwrap().unwrap();
        assert!(lock.release());
    }
    let memory_ns = start.elapsed().as_secs_f64() * 1e9 / f64::from(n);

    // Replica ack, last: a replica attached to the server makes it stream every write to
    // the replica (and the replica process takes CPU), which would weigh on the rows above.
    // With the replica attached, rounds with `WAIT 1` after every grant alternate with rounds
    // of the same store as above.
    let replica = std::env::var("ALKSTORE_BENCH_REPLICA_PORT")
        .ok()
        .map(|port| Replica::start(port.parse().expect("a port"), &url));
    let acked = match &replica {
        Some(_) => {
            let config = RedisConfig::new()
                .with_namespace(&ns)
                .with_replica_ack(1, Duration::from_secs(1));
            let acked = RedisLocks::connect_with(&url, config).await.unwrap();
            let start = Instant::now();
            // Until the replica is in sync, grants are not acknowledged.
            loop {
                match acked.try_lock("rt-acked", "me", TTL).await {
                    Ok(Some(lock)) => {
                        assert!(lock.release().await.unwrap());
                        break;
                    }
                    _ => assert!(
                        start.elapsed() < Duration::from_secs(10),
                        "the replica never synced"
                    ),
                }
            }
            Some(acked)
        }
        None => None,
    };

    let (mut with_ack, mut ours_replicated) = (Vec::new(), Vec::new());
    if let Some(acked) = &acked {
        for _ in 0..ROUNDS {
            with_ack.push(engine_round(acked, "rt-acked").await);
            ours_replicated.push(engine_round(&locks, "rt").await);
        }
    }

    println!(
        "## alkstore-redis bench (one redis-server on localhost, {ROUNDS} alternating rounds, medians)"
    );
    println!();
    // Wall-clock ratios follow the machine's load: on a busy machine every cycle is CPU-bound,
    // and the ratio tends to the ratio of CPU work (the scripts' server time above all).
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        let load: Vec<&str> = load.split_whitespace().take(3).collect();
        println!("load average at the end: {}", load.join(" "));
        println!();
    }
    println!("| what | alkstore-redis | hand-rolled SET NX PX + CAS delete | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| try_lock + release, one at a time | {ours_us:.1} µs | {theirs_us:.1} µs | {ratio:.3}x |"
    );
    println!(
        "| throughput, {TASKS} tasks on one connection | {ours_tp:.0} cycles/s | {theirs_tp:.0} cycles/s | {:.3}x |",
        theirs_tp / ours_tp
    );
    println!(
        "| floor: the baseline taking its lock by a script that reads TIME | | {floor_us:.1} µs | {:.3}x |",
        ours_us / floor_us
    );
    if !with_ack.is_empty() {
        let (acked_us, replicated_us) = (median(with_ack), median(ours_replicated));
        println!(
            "| try_lock + release with replica ack (WAIT 1 after the grant; 1 replica on localhost) | {acked_us:.1} µs | | {:.3}x ours without the ack ({replicated_us:.1} µs, replica attached) |",
            acked_us / replicated_us
        );
    }
    println!("| in-memory engine (LockRegistry), for scale | {memory_ns:.0} ns | | |");
    println!();
    drop(replica);
    let verdict = if ratio <= 1.15 { "within" } else { "OVER" };
    println!("round-trip ratio {ratio:.3}x: {verdict} the 1.15x target");
}
