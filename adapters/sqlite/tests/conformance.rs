//! The shared conformance suite (`alkstore-mem-conformance`) on SQLite: the same test bodies
//! as the in-memory engine, each on a fresh file in a scratch directory, with time moved by
//! the test-only offset in the file (this crate's `test-clock` feature, on for its own tests).

mod common;

use std::future::Future;
use std::time::Duration;

use alkstore_mem_conformance::{Engine, Limits};
use alkstore_sqlite::{SqliteConfig, SqliteLocks};

/// The SQLite engine for the suite: every `open` is a fresh file (its scratch directory is
/// left to the OS's temp cleaning: the store may outlive the body); `advance` raises the
/// file's clock offset and rings the `*` bell.
struct Sqlite;

impl Engine for Sqlite {
    type Store = SqliteLocks;

    async fn open(&self, limits: Limits) -> SqliteLocks {
        let config = SqliteConfig::new()
            .with_max_name_len(limits.max_name_len)
            .with_max_owner_len(limits.max_owner_len);
        let scratch = common::Scratch::new();
        let store = common::store_in(&scratch, config).await;
        // The file stays until the process ends (the store may outlive this call).
        std::mem::forget(scratch);
        store
    }

    async fn advance(&self, store: &SqliteLocks, by: Duration) {
        store
            .advance_test_clock(by)
            .await
            .expect("the file answers");
        // The wake-up travels through the file: give this process's sleepers a moment to
        // re-check before the test body goes on.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn run(test: impl Future<Output = ()>) {
    common::runtime().block_on(test);
}

alkstore_mem_conformance::conformance_suite!(engine = Sqlite, run = run);
