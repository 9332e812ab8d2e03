//! `make demo-redis`: three OS processes share `invoice/1001` on one Redis.
//!
//! - `worker-a` takes the lock (1 s lease) and stalls for 1.6 s: a GC pause, a slow disk.
//! - `worker-b` was waiting: at a's deadline the lease is its, with a larger fencing token; it
//!   writes the invoice and releases, which hands the lease to `worker-c`, waiting behind it.
//! - `worker-a` wakes up and tries its write with its old token: the invoice store (a Redis
//!   hash guarded by a compare-the-token script, as a database would guard a row) refuses
//!   it. Its renew says Expired.
//!
//! The coordinator (this binary without arguments) starts the three processes, checks what
//! each reports and what the store holds, and exits non-zero if anything differs.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use alkstore_mem::LockError;
use alkstore_redis::{RedisConfig, RedisLocks};

const NAME: &str = "invoice/1001";
const LEASE: Duration = Duration::from_millis(1000);

/// A write to the invoice store, fenced: refused unless `token` is above every token seen.
const FENCED_WRITE: &str = r"
local last = tonumber(redis.call('HGET', KEYS[1], 'token') or '0')
if tonumber(ARGV[1]) <= last then return 0 end
redis.call('HSET', KEYS[1], 'token', ARGV[1], 'value', ARGV[2])
return 1
";

fn url() -> String {
    std::env::var("ALKSTORE_REDIS_URL")
        .expect("ALKSTORE_REDIS_URL is not set: run `make demo-redis`, which starts a server")
}

async fn fenced_write(url: &str, store_key: &str, token: u64, value: &str) -> bool {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let written: i64 = redis::Script::new(FENCED_WRITE)
        .key(store_key)
        .arg(token)
        .arg(value)
        .invoke_async(&mut conn)
        .await
        .unwrap();
    written == 1
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("worker") => worker(&args[2], &args[3]).await,
        _ => coordinate().await,
    }
}

/// One worker process: `who` in namespace `ns`. Prints `<who> <event> <token>` lines.
async fn worker(who: &str, ns: &str) {
    let url = url();
    let locks = RedisLocks::connect_with(&url, RedisConfig::new().with_namespace(ns))
        .await
        .unwrap();
    let store_key = format!("{{{ns}}}:store:{NAME}");
    let owner = format!("worker-{who}");
    let mut lock = locks
        .acquire(NAME, &owner, LEASE)
        .timeout(Duration::from_secs(10))
        .await
        .unwrap()
        .expect("granted within 10 s");
    let token = lock.token();
    println!("{who} holds {token}");
    if who == "a" {
        tokio::time::sleep(LEASE * 8 / 5).await; // stalls past its lease
        let written = fenced_write(&url, &store_key, token, &owner).await;
        println!(
            "{who} {} {token}",
            if written { "wrote" } else { "refused" }
        );
        let renewed = lock.renew(LEASE).await;
        assert!(
            matches!(renewed, Err(LockError::Expired { .. })),
            "{renewed:?}"
        );
        println!("{who} expired {token}");
        assert!(
            !lock.release().await.unwrap(),
            "a lapsed lease releases as false"
        );
    } else {
        let written = fenced_write(&url, &store_key, token, &owner).await;
        println!(
            "{who} {} {token}",
            if written { "wrote" } else { "refused" }
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(lock.release().await.unwrap());
    }
}

fn spawn(who: &str, ns: &str) -> (Child, std::io::Lines<BufReader<std::process::ChildStdout>>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["worker", who, ns])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    (child, lines)
}

fn expect(
    lines: &mut std::io::Lines<BufReader<std::process::ChildStdout>>,
    who: &str,
    event: &str,
) -> u64 {
    let line = lines
        .next()
        .unwrap_or_else(|| panic!("{who} ended early"))
        .unwrap();
    let parts: Vec<&str> = line.split(' ').collect();
    assert_eq!((parts[0], parts[1]), (who, event), "unexpected: {line}");
    println!("  worker-{who}: {event} (token {})", parts[2]);
    parts[2].parse().unwrap()
}

async fn coordinate() {
    let url = url();
    let ns = format!("demo{}", std::process::id());
    println!("three processes share {NAME:?} with {LEASE:?} leases (namespace {ns:?})");
    let (mut a, mut a_out) = spawn("a", &ns);
    let a_token = expect(&mut a_out, "a", "holds");
    let (mut b, mut b_out) = spawn("b", &ns);
    tokio::time::sleep(Duration::from_millis(150)).await; // b queues first, then c
    let (mut c, mut c_out) = spawn("c", &ns);
    println!(
        "  worker-a stalls for {:?}, past its lease; b and c wait in line",
        LEASE * 8 / 5
    );
    let b_token = expect(&mut b_out, "b", "holds");
    expect(&mut b_out, "b", "wrote");
    let c_token = expect(&mut c_out, "c", "holds");
    expect(&mut c_out, "c", "wrote");
    expect(&mut a_out, "a", "refused");
    expect(&mut a_out, "a", "expired");
    for (who, child) in [("a", &mut a), ("b", &mut b), ("c", &mut c)] {
        assert!(child.wait().unwrap().success(), "worker-{who} failed");
    }
    assert!(
        a_token < b_token && b_token < c_token,
        "{a_token} < {b_token} < {c_token}"
    );

    let client = redis::Client::open(url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let (token, value): (u64, String) = redis::cmd("HMGET")
        .arg(format!("{{{ns}}}:store:{NAME}"))
        .arg("token")
        .arg("value")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!((token, value.as_str()), (c_token, "worker-c"));
    println!(
        "the store holds worker-c's write (token {token}); worker-a's stale write was refused"
    );
    println!("demo-redis: OK");
}
