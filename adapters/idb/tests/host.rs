//! On the host (no IndexedDB), the crate compiles and every open answers `Unavailable` with a
//! reason: what docs.rs, rust-analyzer and native tests of browser code see.
#![cfg(not(target_arch = "wasm32"))]

use alkstore_idb::{IdbConfig, IdbLocks, LockError};

#[test]
fn opening_a_store_on_the_host_is_unavailable_and_says_why() {
    let result = futures_lite::future::block_on(IdbLocks::open_with("app", IdbConfig::new()));
    match result {
        Err(LockError::Unavailable { reason }) => {
            assert!(reason.contains("wasm32-unknown-unknown"), "{reason}");
            assert!(reason.contains("\"app\""), "{reason}");
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
}
