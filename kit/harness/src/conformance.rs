//! [`Conformance`]: the conformance suite's `Engine` (`alkstore-mem-conformance`) for any
//! [`Fixture`], so that an engine runs the suite with one macro call:
//! ```ignore
//! alkstore_mem_conformance::conformance_suite!(
//!     engine = alkstore_kit_harness::Conformance(common::Fixture),
//!     run = alkstore_kit_harness::support::run,
//! );
//! ```

use std::time::Duration;

use alkstore_kit::CommonConfig;
use alkstore_mem_conformance::{Engine, Limits};

use crate::fixture::{Fixture, Store};
use crate::support::store_with;

/// The engine of fixture `F` as the conformance suite drives it: every `open` is a fresh
/// scope on the shared server; `advance` moves the engine's test clock (which wakes every
/// sleeper of the scope), then gives this process's sleepers a moment to re-check.
#[derive(Clone, Copy, Debug)]
pub struct Conformance<F>(pub F);

impl<F: Fixture> Engine for Conformance<F> {
    type Store = Store<F>;

    async fn open(&self, limits: Limits) -> Store<F> {
        let common = CommonConfig::new()
            .with_max_name_len(limits.max_name_len)
            .with_max_owner_len(limits.max_owner_len);
        store_with(&self.0, common).await
    }

    async fn advance(&self, store: &Store<F>, by: Duration) {
        store
            .advance_test_clock(by)
            .await
            .expect("the test server answers");
        // The wake-up travels through the server: a moment for the sleepers to re-check.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
