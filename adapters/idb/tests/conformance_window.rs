//! The shared conformance suite against `IdbLocks` in a browser window (headless Chromium).
#![cfg(target_arch = "wasm32")]

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

mod common;

alkstore_mem_conformance::conformance_suite!(
    engine = common::Idb,
    run = futures_lite::future::block_on
);
