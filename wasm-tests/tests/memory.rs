//! The contract suite against the in-memory engine (`LockRegistry` on a `ManualClock`).
//! Runs natively (`cargo test`) and in headless Chromium (`make test-browser`).

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

alkstore_mem_conformance::conformance_suite!(
    engine = alkstore_mem_conformance::MemoryEngine,
    run = futures_lite::future::block_on
);
