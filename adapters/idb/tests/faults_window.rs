//! Faults one context can show, in a browser window (see tests/common/faults.rs).
#![cfg(target_arch = "wasm32")]

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

mod common;

include!("common/faults.rs");
