//! The alkstore-mem conformance suite lives in `tests/`: each file runs natively under
//! `cargo test` and in headless Chromium under `wasm-bindgen-test`. This library holds the
//! helpers those files share.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use alkstore_mem::{LockRegistry, ManualClock};

/// A registry on a fresh [`ManualClock`], and a clone of that clock to move time with.
pub fn manual_registry() -> (LockRegistry<ManualClock>, ManualClock) {
    let clock = ManualClock::new();
    (LockRegistry::new(clock.clone()), clock)
}
