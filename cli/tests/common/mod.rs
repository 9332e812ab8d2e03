//! Helpers for the tests that run the built `alkstore` against a real Redis: the server's
//! URL, fresh namespaces, running the binary, an independent clock formatter (`date`), and a
//! strict JSON reader to check the output with.
#![allow(dead_code, reason = "each test binary uses part of it")]

pub mod json;

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use alkstore_mem::Timestamp;
use alkstore_redis::{RedisConfig, RedisLocks};

/// The test server's URL. Tests FAIL without it: run them with `make test-cli`.
pub fn url() -> String {
    std::env::var("ALKSTORE_REDIS_URL").unwrap_or_else(|_| {
        panic!(
            "ALKSTORE_REDIS_URL is not set: these tests run the alkstore binary against a Redis. \
             Run `make test-cli`, which starts a scratch server (127.0.0.1:6390 by default, \
             CLI_REDIS_PORT) and sets it, or `scripts/redis-run.sh --port 6410 -- cargo test \
             -p alkstore-cli`"
        )
    })
}

/// A multi-thread tokio runtime: the test's own locks and waiters live on it while the
/// binary runs.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// A namespace no other test (or run) uses.
pub fn fresh_namespace() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "cli{}-{}-{}",
        std::process::id(),
        nanos % 1_000_000_000_000,
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A store on the test server in namespace `ns`.
pub async fn store_in(ns: &str) -> RedisLocks {
    RedisLocks::connect_with(&url(), RedisConfig::new().with_namespace(ns))
        .await
        .expect("the test Redis answers")
}

/// What one run of the binary did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `alkstore args...` with no `ALKSTORE_URL` in its environment, and `env` added.
pub fn alkstore_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_alkstore"));
    command.args(args).env_remove("ALKSTORE_URL");
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("the alkstore binary runs");
    Run {
        code: output
            .status
            .code()
            .expect("exited, not killed by a signal"),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

/// Runs `alkstore --url <test server> --namespace ns args...`.
pub fn alkstore(ns: &str, args: &[&str]) -> Run {
    let url = url();
    let mut all = vec!["--url", &url, "--namespace", ns];
    all.extend_from_slice(args);
    alkstore_env(&all, &[])
}

/// `at` (ns since the Unix epoch) as RFC 3339 UTC with `digits` fraction digits, by GNU
/// `date`: an oracle that shares no code with the tool.
pub fn utc_by_date(at: Timestamp, digits: u32) -> String {
    let nanos = at.as_nanos();
    let stamp = format!("@{}.{:09}", nanos / 1_000_000_000, nanos % 1_000_000_000);
    let format = format!("+%Y-%m-%dT%H:%M:%S.%{digits}NZ");
    let output = Command::new("date")
        .args(["-u", "-d", &stamp, &format])
        .output()
        .expect("date runs");
    assert!(output.status.success(), "date {stamp} {format}");
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// Waits (in real time, up to 10 s: a bound for a hang, not a timing assertion) until
/// `store`'s snapshot shows `count` waiters.
pub async fn until_waiting(store: &RedisLocks, count: usize) {
    let start = Instant::now();
    loop {
        let snapshot = store.snapshot().await.expect("snapshot");
        if snapshot.waiting.len() >= count {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{count} waiters never showed up: {snapshot:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
