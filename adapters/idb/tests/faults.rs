//! Faults one context can show (see tests/common/faults.rs), run by `make test-idb` in a window
//! and in a dedicated worker: the context comes from `WASM_BINDGEN_USE_BROWSER` or
//! `WASM_BINDGEN_USE_DEDICATED_WORKER` (see conformance.rs).
#![cfg(target_arch = "wasm32")]

mod common;

include!("common/faults.rs");
