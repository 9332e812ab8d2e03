//! The shared conformance suite (`alkstore-mem-conformance`) on PostgreSQL: the same test
//! bodies as the in-memory engine, each on a fresh schema of the shared test cluster (`make
//! test-pg`), with time moved by the test-only offset on the server's clock (this crate's
//! `test-clock` feature, on for its own tests only).

mod common;

use std::future::Future;
use std::time::Duration;

use alkstore_mem_conformance::{Engine, Limits};
use alkstore_pg::{PgConfig, PgLocks};

/// The PostgreSQL engine for the suite: every `open` is a fresh schema, so stores never meet;
/// `advance` raises that schema's clock offset and wakes its sleepers by NOTIFY.
struct Postgres;

impl Engine for Postgres {
    type Store = PgLocks;

    async fn open(&self, limits: Limits) -> PgLocks {
        let config = PgConfig::new()
            .with_max_name_len(limits.max_name_len)
            .with_max_owner_len(limits.max_owner_len);
        common::store_with(config).await
    }

    async fn advance(&self, store: &PgLocks, by: Duration) {
        store
            .advance_test_clock(by)
            .await
            .expect("the test cluster answers");
        // The wake-up travels by NOTIFY: give this process's sleepers a moment to re-check
        // before the test body goes on.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn run(test: impl Future<Output = ()>) {
    common::runtime().block_on(test);
}

alkstore_mem_conformance::conformance_suite!(engine = Postgres, run = run);
