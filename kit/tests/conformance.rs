//! The shared conformance suite on the kit's machinery, over the model engine (no server):
//! every contract rule holds for `Locks<P>` whatever the engine underneath, as long as its
//! protocol does what the `Protocol` docs say.

mod model;

use std::future::Future;
use std::time::Duration;

use alkstore_kit::Locks;
use alkstore_mem_conformance::{Engine, Limits};
use model::{Model, ModelConfig};

struct ModelEngine;

impl Engine for ModelEngine {
    type Store = Locks<Model>;

    async fn open(&self, limits: Limits) -> Locks<Model> {
        let config = ModelConfig::default()
            .with_max_name_len(limits.max_name_len)
            .with_max_owner_len(limits.max_owner_len)
            .with_io_timeout(Duration::from_millis(100));
        let locks: Locks<Model> = Locks::connect_with("model://", config).await.unwrap();
        // A round trip takes time, as on a real engine: the suite's settles (one call each)
        // give the store's background work (withdrawals, releases on drop) a chance to land.
        // With none, a call the model answers at once costs nothing and 500 settles pass
        // before a withdrawal's task is scheduled on a loaded machine.
        locks.engine().set_delay(Duration::from_millis(1));
        locks
    }

    async fn advance(&self, store: &Locks<Model>, by: Duration) {
        store.advance_test_clock(by).await.unwrap();
        // The wake-up travels through the listener task: let sleepers re-check.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn run(test: impl Future<Output = ()>) {
    model::runtime(2).block_on(test);
}

alkstore_mem_conformance::conformance_suite!(engine = ModelEngine, run = run);
