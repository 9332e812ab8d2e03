//! What only the IndexedDB engine has (see tests/common/engine.rs), run by `make test-idb` in a
//! window and in a dedicated worker: the context comes from `WASM_BINDGEN_USE_BROWSER` or
//! `WASM_BINDGEN_USE_DEDICATED_WORKER` (see conformance.rs).
#![cfg(target_arch = "wasm32")]

mod common;

include!("common/engine.rs");

/// Prints the context this binary runs in (the constructor of its global object: `Window`
/// or `DedicatedWorkerGlobalScope`), which `make test-idb` reads (with `--nocapture`) to check
/// that the runner put it where it was asked to.
#[wasm_bindgen_test]
fn names_the_context_it_runs_in() {
    let global = js_sys::global();
    let constructor = js_sys::Reflect::get(&global, &"constructor".into()).unwrap();
    let name = js_sys::Reflect::get(&constructor, &"name".into())
        .unwrap()
        .as_string()
        .unwrap_or_default();
    assert!(
        !name.is_empty(),
        "the global object has no constructor name"
    );
    wasm_bindgen_test::console_log!("alkstore-idb test context: {name}");
}
