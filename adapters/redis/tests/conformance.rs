//! The shared conformance suite (`alkstore-mem-conformance`) on Redis: the same test bodies
//! as the in-memory engine, each on a fresh namespace of the shared test server (`make
//! test-redis`), with time moved by the test-only offset on the server's clock (this crate's
//! `test-clock` feature, on for its own tests only).

mod common;

use std::future::Future;
use std::time::Duration;

use alkstore_mem_conformance::{Engine, Limits};
use alkstore_redis::{RedisConfig, RedisLocks};

/// The Redis engine for the suite: every `open` is a fresh random namespace, so stores never
/// meet; `advance` raises that namespace's clock offset and wakes its sleepers by pub/sub.
struct Redis;

impl Engine for Redis {
    type Store = RedisLocks;

    async fn open(&self, limits: Limits) -> RedisLocks {
        let config = RedisConfig::new()
            .with_max_name_len(limits.max_name_len)
            .with_max_owner_len(limits.max_owner_len);
        common::store_with(config).await
    }

    async fn advance(&self, store: &RedisLocks, by: Duration) {
        store
            .advance_test_clock(by)
            .await
            .expect("the test Redis answers");
        // The wake-up travels by pub/sub: give this process's sleepers a moment to re-check
        // before the test body goes on.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn run(test: impl Future<Output = ()>) {
    common::runtime().block_on(test);
}

alkstore_mem_conformance::conformance_suite!(engine = Redis, run = run);
