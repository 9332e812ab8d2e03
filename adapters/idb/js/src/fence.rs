//! [`Fence`]: the core's `Fence` for JavaScript.

use wasm_bindgen::prelude::*;

use crate::error::{token_from_js, token_js};

/// The resource's side of fencing: accepts a token at or above the highest it has seen
/// (and records it), refuses a lower one. Keep one beside the data a lock protects and check
/// every write's token in the same critical section as the write.
#[wasm_bindgen]
#[derive(Debug, Default)]
pub struct Fence(alkstore_mem::Fence);

#[wasm_bindgen]
impl Fence {
    /// A fence that has seen no token, or one restored from the highest token stored beside
    /// the data (`highest`). Throws a `TypeError` unless `highest` is an integer from 0 to
    /// 2^53 - 1.
    #[wasm_bindgen(constructor)]
    pub fn new(highest: Option<f64>) -> Result<Fence, JsValue> {
        Ok(match highest {
            Some(h) => Fence(alkstore_mem::Fence::with_highest(token_from_js(h)?)),
            None => Fence::default(),
        })
    }

    /// `true` when a write with `token` may go ahead (it is recorded as the highest), `false`
    /// when a newer holder already wrote (nothing changes). Throws a `TypeError` unless
    /// `token` is an integer from 0 to 2^53 - 1.
    pub fn check(&self, token: f64) -> Result<bool, JsValue> {
        Ok(self.0.check(token_from_js(token)?).is_ok())
    }

    /// The highest token accepted so far, or `undefined` before the first.
    #[wasm_bindgen(getter)]
    pub fn highest(&self) -> Result<Option<f64>, JsValue> {
        self.0.highest().map(token_js).transpose()
    }
}
