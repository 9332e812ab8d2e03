//! [`bench_cycles`]: try_lock + release cycles timed in Rust, for the browser benchmark.

use core::time::Duration;

use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::js::err;
use crate::locks::Locks;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;
}

/// `n` try_lock + release cycles on `name`, timed in Rust: the elapsed ms.
#[wasm_bindgen(js_name = benchCycles)]
pub fn bench_cycles(locks: &Locks, name: String, n: u32) -> Promise {
    let locks = locks.clone();
    future_to_promise(async move { cycles(locks, name, n).await.map(JsValue::from) })
}

async fn cycles(locks: Locks, name: String, n: u32) -> Result<f64, JsValue> {
    let t0 = performance_now();
    for _ in 0..n {
        let lock = locks
            .inner()
            .try_lock(&name, "bench", Duration::from_secs(30))
            .await
            .map_err(err)?
            .ok_or_else(|| JsValue::from_str("bench name busy"))?;
        if !lock.release().await.map_err(err)? {
            return Err(JsValue::from_str("bench lease lapsed"));
        }
    }
    Ok(performance_now() - t0)
}
