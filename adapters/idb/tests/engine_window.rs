//! What only the IndexedDB engine has, in a browser window (see tests/common/engine.rs).
#![cfg(target_arch = "wasm32")]

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

mod common;

include!("common/engine.rs");
