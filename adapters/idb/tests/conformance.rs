//! The shared conformance suite against `IdbLocks` in headless Chromium, run twice by
//! `make test-idb`: in a window (`WASM_BINDGEN_USE_BROWSER=1`) and in a dedicated worker
//! (`WASM_BINDGEN_USE_DEDICATED_WORKER=1`: IndexedDB and BroadcastChannel from the worker's
//! global scope). One build for both contexts: the runner picks the context from that
//! variable, since this binary does not configure one (without either, it would run in Node,
//! which has no IndexedDB, and fail).
#![cfg(target_arch = "wasm32")]

mod common;

alkstore_mem_conformance::conformance_suite!(
    engine = common::Idb,
    run = futures_lite::future::block_on
);
