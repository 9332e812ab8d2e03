//! Faults one context can show, in a dedicated worker (see tests/common/faults.rs).
#![cfg(target_arch = "wasm32")]

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_dedicated_worker);

mod common;

include!("common/faults.rs");
