//! What one `try_lock` + `release` costs the server: runs cycles on a free name (the fast path)
//! and prints, per cycle, the commands Redis counted (`INFO commandstats`: the client's round
//! trips, EVALSHA or FCALL, and every `redis.call` inside them) and the server time they took.
//! Run it alone against a scratch server:
//! `scripts/redis-run.sh --port 6399 -- cargo run --release -q -p alkstore-redis-tools --bin probe`.
//!
//! `ALKSTORE_PROBE_CYCLES=n` runs n cycles instead of 2,000, and `ALKSTORE_PROBE_ONLY=engine`
//! (or `baseline`) runs one side only: under `valgrind --tool=callgrind`, the difference between
//! two runs of different n, divided by the difference of n, is the client's instructions per
//! cycle.

use std::time::Duration;

use alkstore_redis::{RedisConfig, RedisLocks};

/// Cycles measured per side, unless `ALKSTORE_PROBE_CYCLES` says otherwise.
const CYCLES: u32 = 2_000;

/// `ALKSTORE_PROBE_CYCLES`, else [`CYCLES`].
fn cycles() -> u32 {
    std::env::var("ALKSTORE_PROBE_CYCLES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(CYCLES)
}

/// Whether `side` (`engine` or `baseline`) runs: both unless `ALKSTORE_PROBE_ONLY` names one.
fn runs(side: &str) -> bool {
    std::env::var("ALKSTORE_PROBE_ONLY").map_or(true, |only| only == side)
}
const TTL: Duration = Duration::from_secs(30);

/// `INFO commandstats` as (command, calls, usec).
async fn stats(conn: &mut redis::aio::MultiplexedConnection) -> Vec<(String, u64, u64)> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .unwrap();
    let mut out = Vec::new();
    for line in info.lines() {
        let Some(rest) = line.strip_prefix("cmdstat_") else {
            continue;
        };
        let Some((name, fields)) = rest.split_once(':') else {
            continue;
        };
        let get = |key: &str| -> u64 {
            fields
                .split(',')
                .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
                .and_then(|v| v.parse::<f64>().ok())
                .map_or(0, |v| v as u64)
        };
        out.push((name.to_string(), get("calls"), get("usec")));
    }
    out
}

/// `SET NX PX` then compare-and-delete on `key`, `n` times: the bench's hand-rolled lock.
async fn baseline_cycles(
    conn: &mut redis::aio::MultiplexedConnection,
    cas: &redis::Script,
    key: &str,
    n: u32,
) {
    for i in 0..n {
        let token = i.to_string();
        let set: Option<String> = redis::cmd("SET")
            .arg(key)
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(30_000)
            .query_async(conn)
            .await
            .unwrap();
        assert!(set.is_some());
        let n: i64 = cas.key(key).arg(&token).invoke_async(conn).await.unwrap();
        assert_eq!(n, 1);
    }
}

/// `try_lock` + `release` on `p`, `n` times.
async fn engine_cycles(locks: &RedisLocks, n: u32) {
    for _ in 0..n {
        let lock = locks.try_lock("p", "me", TTL).await.unwrap().unwrap();
        assert!(lock.release().await.unwrap());
    }
}

/// Resets the server's command counters.
async fn reset(conn: &mut redis::aio::MultiplexedConnection) {
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(conn)
        .await
        .unwrap();
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let url = std::env::var("ALKSTORE_REDIS_URL").expect("ALKSTORE_REDIS_URL is not set");
    let n = cycles();
    let ns = format!("probe{}", std::process::id());
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    if runs("engine") {
        let locks = RedisLocks::connect_with(&url, RedisConfig::new().with_namespace(&ns))
            .await
            .unwrap();
        engine_cycles(&locks, 200).await;
        reset(&mut conn).await;
        engine_cycles(&locks, n).await;
        report(
            "alkstore-redis",
            n,
            &["evalsha", "fcall"],
            &stats(&mut conn).await,
        );
    }
    if runs("baseline") {
        // The hand-rolled lock of the bench, for comparison: SET NX PX, then compare-and-delete.
        let cas = redis::Script::new(
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end",
        );
        let key = format!("{{{ns}}}:baseline");
        baseline_cycles(&mut conn, &cas, &key, 200).await;
        reset(&mut conn).await;
        baseline_cycles(&mut conn, &cas, &key, n).await;
        report(
            "hand-rolled SET NX PX + CAS delete",
            n,
            &["set", "evalsha"],
            &stats(&mut conn).await,
        );
    }
}

/// Prints `stats` per cycle; `top` names the commands the client sent (the rest ran inside them).
fn report(what: &str, cycles: u32, top: &[&str], stats: &[(String, u64, u64)]) {
    let per = |n: u64| n as f64 / f64::from(cycles);
    println!();
    println!("{what}: per lock + release cycle on a free name ({cycles} cycles):");
    println!("| command | calls | server µs |");
    println!("|---|---|---|");
    let (mut trips, mut inner, mut usec) = (0.0, 0.0, 0.0);
    for (name, calls, us) in stats {
        if name == "info" || name == "config|resetstat" {
            continue;
        }
        println!("| {name} | {:.2} | {:.2} |", per(*calls), per(*us));
        if top.contains(&name.as_str()) {
            trips += per(*calls);
            usec += per(*us);
        } else {
            inner += per(*calls);
        }
    }
    println!("round trips: {trips:.2}; commands run by scripts: {inner:.2}; server µs: {usec:.2}");
}
