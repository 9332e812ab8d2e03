//! The IndexedDB engine for the conformance suite: every store is a fresh database (a unique
//! name), time moves by the test-only offset in its `meta` store, and every sleeper of the
//! database re-checks after an advance.

use core::time::Duration;

use alkstore_idb::{IdbConfig, IdbLocks};
use alkstore_mem_conformance::{Engine, Limits};

/// `IdbLocks` on a fresh database per store.
#[allow(dead_code)] // not every test binary runs the suite
pub struct Idb;

/// A database name no other test uses.
pub fn fresh_name(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        js_sys::Date::now() as u64,
        (js_sys::Math::random() * 1e12) as u64
    )
}

impl Engine for Idb {
    type Store = IdbLocks;

    async fn open(&self, limits: Limits) -> IdbLocks {
        let config = IdbConfig::new()
            .with_max_name_len(limits.max_name_len)
            .with_max_owner_len(limits.max_owner_len)
            // The suite's ttls are whole seconds of test time: real time barely moves.
            .with_io_timeout(Duration::from_secs(2));
        IdbLocks::open_with(&fresh_name("conformance"), config)
            .await
            .expect("IndexedDB opens in the test browser")
    }

    async fn advance(&self, store: &IdbLocks, by: Duration) {
        store
            .advance_test_clock(by)
            .await
            .expect("the test database answers");
    }
}
