//! Helpers shared by the Redis test suites: the shared server's URL, fresh namespaces, a
//! dedicated server for fault tests, and the [`Fixture`] that runs the kit's shared suites
//! (`alkstore-kit-harness`) on Redis.
#![allow(dead_code, reason = "each test binary uses part of it")]

use std::process::Command;
use std::time::Duration;

use alkstore_kit_harness::{CommonConfig, support};
use alkstore_redis::{Redis, RedisConfig, RedisLock, RedisLocks};

mod server;
pub use server::RedisServer;

/// The Redis engine for the shared suites: scopes are namespaces; fault servers are
/// `redis-server`s of the tests' own, with no persistence.
pub struct Fixture;

impl alkstore_kit_harness::Fixture for Fixture {
    type Engine = Redis;
    type Server = RedisServer;
    // The Makefile's REDIS_FAULT_PORTS (each test binary runs alone, so binaries may share).
    const FAULT_PORTS: &'static [u16] = &[6395, 6391, 6392, 6393, 6394, 6396, 6397, 6398];
    const RESTART_KEEPS_DATA: bool = false;

    fn url(&self) -> String {
        url()
    }

    fn config(&self, scope: &str, common: CommonConfig) -> RedisConfig {
        let limits = common.limits();
        RedisConfig::new()
            .with_namespace(scope)
            .with_max_name_len(limits.max_name_len())
            .with_max_owner_len(limits.max_owner_len())
            .with_io_timeout(common.io_timeout())
            .with_waiter_heartbeat(common.waiter_heartbeat())
    }

    fn start_server(&self, port: u16) -> RedisServer {
        RedisServer::start(port)
    }
}

impl alkstore_kit_harness::Server for RedisServer {
    fn url(&self) -> String {
        RedisServer::url(self)
    }
    fn kill(&mut self) {
        RedisServer::kill(self);
    }
    fn launch(&mut self) {
        RedisServer::launch(self);
    }
    fn pause(&self) {
        RedisServer::pause(self);
    }
    fn resume(&self) {
        RedisServer::resume(self);
    }
    fn kill_sessions(&self) {
        self.cli(&["CLIENT", "KILL", "TYPE", "pubsub"]);
        self.cli(&["CLIENT", "KILL", "TYPE", "normal"]);
    }
    fn sessions_accepted(&self) -> u64 {
        let stats = self.cli(&["INFO", "stats"]);
        let line = stats
            .lines()
            .find_map(|l| l.strip_prefix("total_connections_received:"));
        line.and_then(|n| n.trim().parse().ok())
            .expect("INFO stats answers")
    }
}

/// A multi-thread tokio runtime with two workers, time and I/O: what the suites run on.
pub fn runtime() -> tokio::runtime::Runtime {
    support::runtime()
}

/// The shared test server's URL. Tests FAIL without it: run them with `make test-redis`.
pub fn url() -> String {
    std::env::var("ALKSTORE_REDIS_URL").unwrap_or_else(|_| {
        panic!(
            "ALKSTORE_REDIS_URL is not set: these tests need a Redis. Run `make test-redis`, \
             which starts a scratch server on 127.0.0.1:$REDIS_PORT (6390 by default) and sets it"
        )
    })
}

/// Runs redis-cli with `args` against the shared test server (`ALKSTORE_REDIS_URL`).
pub fn shared_cli(args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .arg("-u")
        .arg(url())
        .args(args)
        .output()
        .expect("redis-cli runs (make setup installs it)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every key of namespace `ns` on the shared test server, sorted.
pub fn namespace_keys(ns: &str) -> Vec<String> {
    let mut keys: Vec<String> = shared_cli(&["--scan", "--pattern", &format!("{{{ns}}}:*")])
        .lines()
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
        .collect();
    keys.sort();
    keys
}

/// The keys of namespace `ns` on the shared test server, sorted, without the short-lived
/// marks of releases (`{ns}:released:<rid>`, gone after max(2 x io_timeout, 1 s); see
/// `review_x.rs`'s `release_marks_expire`).
pub fn live_keys(ns: &str) -> Vec<String> {
    let mut keys = namespace_keys(ns);
    keys.retain(|k| !k.starts_with(&format!("{{{ns}}}:released:")));
    keys
}

/// Releases `first` while a waiter "two" of `locks` (queued 100 ms before, waiting up to
/// 5 s for `ttl`) waits on its name: the waiter's lock, handed over with a larger token.
pub async fn hand_off(locks: &RedisLocks, first: RedisLock, ttl: Duration) -> RedisLock {
    let waiter = {
        let (locks, name) = (locks.clone(), first.name().to_owned());
        tokio::spawn(async move {
            locks
                .acquire(&name, "two", ttl)
                .timeout(Duration::from_secs(5))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let token = first.token();
    assert_eq!(first.release().await, Ok(true));
    let second = waiter.await.unwrap().unwrap().expect("handed over");
    assert!(second.token() > token);
    second
}

/// Waits (polling every 10 ms, up to 5 s) until `condition` holds; panics with `what` if it
/// never does. For states that spawned tasks reach soon, not for timings.
pub fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    alkstore_kit_harness::support::wait_until(what, &mut condition);
}

/// A namespace no other test (or run) uses.
pub fn fresh_namespace() -> String {
    alkstore_kit_harness::fresh_scope()
}

/// A store on the shared server, in a fresh namespace.
pub async fn store() -> RedisLocks {
    store_with(RedisConfig::new()).await
}

/// A store on the shared server with `config`, in a fresh namespace.
pub async fn store_with(config: RedisConfig) -> RedisLocks {
    RedisLocks::connect_with(&url(), config.with_namespace(fresh_namespace()))
        .await
        .expect("the test Redis answers")
}

/// A store on the shared server in namespace `ns`.
pub async fn store_in(ns: String) -> RedisLocks {
    RedisLocks::connect_with(&url(), RedisConfig::new().with_namespace(ns))
        .await
        .expect("the test Redis answers")
}
