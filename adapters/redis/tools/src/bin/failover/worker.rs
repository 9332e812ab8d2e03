//! One worker process of the failover stress: until the stop file appears, takes a lease on
//! one of a few names (mostly `acquire`, sometimes `try_lock`), holds it 20-200 ms with a
//! renewal half-way, and releases it; every event goes to the shared log (see
//! `alkstore_redis_tools::failover` for the lines).

use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use alkstore_redis::alkstore_mem::{LockError, Timestamp};
use alkstore_redis::{RedisConfig, RedisLock, RedisLocks};

/// The names the workers share.
pub const NAMES: [&str; 3] = ["n0", "n1", "n2"];
/// Each lease's ttl: longer than a hold, shorter than a failover.
pub const TTL: Duration = Duration::from_secs(3);
/// How long an `acquire` may wait before it counts as stranded.
pub const WAIT: Duration = Duration::from_secs(30);

/// What a worker is told by the parent (through its environment).
#[derive(Debug)]
pub struct Job {
    pub url: String,
    pub namespace: String,
    pub log: String,
    pub stop: String,
    pub index: u64,
    pub ack: bool,
    /// Unix seconds past which the worker stops by itself, whatever the parent does.
    pub until_secs: u64,
}

/// The worker's clock in µs since the Unix epoch (the servers' clock, on one host).
fn now_us() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_micros()).unwrap_or(u64::MAX)
}

fn us(t: Timestamp) -> u64 {
    t.as_nanos() / 1000
}

/// A small xorshift for the worker's choices.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The store's config for a worker: an `io_timeout` long enough for a call to ride over a
/// failover, and with `ack`, one replica's acknowledgement within 500 ms.
pub fn config(namespace: &str, ack: bool) -> RedisConfig {
    let config = RedisConfig::new()
        .with_namespace(namespace)
        .with_io_timeout(Duration::from_secs(5));
    if ack {
        config.with_replica_ack(1, Duration::from_millis(500))
    } else {
        config
    }
}

/// Runs the worker until the stop file exists (or its time is up).
pub async fn run(job: Job) {
    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .open(&job.log)
        .expect("the shared log exists");
    let mut log = |line: String| {
        out.write_all(format!("{line}\n").as_bytes())
            .expect("the shared log takes a line");
    };
    let me = format!("p{}", job.index);
    let locks = loop {
        match RedisLocks::connect_with(&job.url, config(&job.namespace, job.ack)).await {
            Ok(locks) => break locks,
            Err(_) if now_us() / 1_000_000 < job.until_secs => {
                log(format!("refused connect {me}"));
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("no connection until the end: {e}"),
        }
    };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (job.index + 1).wrapping_mul(0x2545_f491));
    while !Path::new(&job.stop).exists() && now_us() / 1_000_000 < job.until_secs {
        let name = NAMES[usize::try_from(rng.below(3)).unwrap_or(0)];
        let granted = if rng.below(4) == 0 {
            locks.try_lock(name, &me, TTL).await
        } else {
            match locks.acquire(name, &me, TTL).timeout(WAIT).await {
                Ok(None) => {
                    log(format!("stranded {name} {me}"));
                    continue;
                }
                other => other,
            }
        };
        match granted {
            Ok(Some(lock)) => hold(lock, &mut rng, &mut log).await,
            Ok(None) => tokio::time::sleep(Duration::from_millis(10)).await,
            Err(_) => {
                log(format!("refused take {me}"));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Holds `lock` 20-200 ms with a renewal half-way, logs it, and releases it.
async fn hold(mut lock: RedisLock, rng: &mut Rng, log: &mut impl FnMut(String)) {
    let (name, me, token) = (
        lock.name().to_owned(),
        lock.owner().to_owned(),
        lock.token(),
    );
    let ttl_us = u64::try_from(TTL.as_micros()).unwrap_or(u64::MAX);
    let grant_us = us(lock.deadline()).saturating_sub(ttl_us);
    log(format!("enter {name} {token} {grant_us} {me}"));
    let half = Duration::from_millis(10 + rng.below(90));
    tokio::time::sleep(half).await;
    let mut lost = false;
    let before_us = us(lock.deadline());
    match lock.renew(TTL).await {
        Ok(()) => {}
        // Gone while it should have been live (not a renewal that came too late).
        Err(LockError::Expired { .. }) => lost = now_us() < before_us,
        Err(_) => log(format!("refused renew {me}")),
    }
    if !lost {
        tokio::time::sleep(half).await;
    }
    // The last deadline the server confirmed: past it, the lease is not believed held.
    let deadline_us = us(lock.deadline());
    let end_us = now_us().min(deadline_us);
    log(format!("exit {name} {token} {end_us} {me}"));
    match lock.release().await {
        Ok(true) => {}
        // Gone while it should have been live (not a release that came too late).
        Ok(false) => lost |= now_us() < deadline_us,
        Err(_) => log(format!("refused release {me}")),
    }
    if lost {
        log(format!("lost {name} {token} {me}"));
    }
}
