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

/// Waits `millis` of real time in the browser, on a `setTimeout` promise.
#[cfg(target_arch = "wasm32")]
pub async fn browser_sleep(millis: i32) {
    use wasm_bindgen::prelude::*;

    #[wasm_bindgen]
    extern "C" {
        #[wasm_bindgen(js_name = setTimeout)]
        fn set_timeout(handler: &js_sys::Function, millis: i32) -> JsValue;
    }

    let promise = js_sys::Promise::new(&mut |resolve, _reject| {
        set_timeout(&resolve, millis);
    });
    wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .expect("a setTimeout promise never rejects");
}
