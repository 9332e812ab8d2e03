//! What only the IndexedDB engine has, in a dedicated worker (see tests/common/engine.rs).
#![cfg(target_arch = "wasm32")]

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_dedicated_worker);

mod common;

include!("common/engine.rs");
