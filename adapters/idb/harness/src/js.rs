//! What the classes share (errors and leases as JavaScript values, durations, a sleep), and
//! the `Fence`.

use core::time::Duration;

use alkstore_idb::{LeaseInfo, LockError};
use js_sys::{Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

/// A `LockError` as a JavaScript `Error` with a `kind` (`"Unavailable"`, `"Expired"`, ...).
pub(crate) fn err(e: LockError) -> JsValue {
    let obj: Object = js_sys::Error::new(&e.to_string()).into();
    let kind = match &e {
        LockError::Unavailable { .. } => "Unavailable",
        LockError::Expired { .. } => "Expired",
        LockError::InvalidTtl { .. } => "InvalidTtl",
        LockError::InvalidName { .. } => "InvalidName",
        LockError::InvalidOwner { .. } => "InvalidOwner",
        _ => "Other",
    };
    set(&obj, "kind", kind.into());
    obj.into()
}

/// Milliseconds (a JavaScript number) as a `Duration`; negative counts as zero.
pub(crate) fn ms(millis: f64) -> Duration {
    Duration::from_secs_f64(millis.max(0.0) / 1000.0)
}

pub(crate) fn set(obj: &Object, key: &str, value: JsValue) {
    let _ = Reflect::set(obj, &JsValue::from_str(key), &value);
}

/// A lease as `{ name, owner, token, deadline (ms), deadlineUs, deadlineNsRem }`.
pub(crate) fn info_js(lease: &LeaseInfo) -> JsValue {
    let obj = Object::new();
    let nanos = lease.deadline().as_nanos();
    set(&obj, "name", lease.name().into());
    set(&obj, "owner", lease.owner().into());
    set(&obj, "token", (lease.token() as f64).into());
    set(&obj, "deadline", (nanos as f64 / 1e6).into());
    // µs: exact in an f64 (the engine keeps µs).
    set(&obj, "deadlineUs", ((nanos / 1000) as f64).into());
    set(&obj, "deadlineNsRem", ((nanos % 1000) as f64).into());
    obj.into()
}

/// A `setTimeout` promise, as a future.
pub(crate) async fn sleep_ms(millis: f64) {
    let promise = Promise::new(&mut |resolve, _| {
        let _ = set_timeout(&resolve, millis);
    });
    let _ = JsFuture::from(promise).await;
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &js_sys::Function, millis: f64) -> JsValue;
}

/// The store side of fencing: refuses a token lower than the highest it saw.
#[wasm_bindgen]
#[derive(Debug, Default)]
pub struct Fence(alkstore_mem::Fence);

#[wasm_bindgen]
impl Fence {
    /// A fence that has seen no token.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Fence {
        Fence::default()
    }

    /// `null` when a write with `token` may go ahead, else why it is refused.
    pub fn check(&self, token: f64) -> JsValue {
        match self.0.check(token as u64) {
            Ok(()) => JsValue::NULL,
            Err(stale) => JsValue::from_str(&stale.to_string()),
        }
    }
}
