//! What the classes share: a `LockError` as a JavaScript `Error`, leases as plain objects,
//! milliseconds as durations, tokens as numbers.

use core::time::Duration;

use alkstore_idb::{LeaseInfo, LockError, TtlProblem};
use alkstore_mem::Timestamp;
use js_sys::{Object, Reflect};
use wasm_bindgen::prelude::*;

/// The largest integer a JavaScript number holds exactly: 2^53 - 1.
pub(crate) const MAX_SAFE: u64 = (1 << 53) - 1;

/// A `LockError` as a JavaScript `Error` whose `name` says which: `InvalidNameError`,
/// `ReservedNameError`, `InvalidOwnerError`, `InvalidTtlError`, `ExpiredError`,
/// `CapacityError`, `UnavailableError`. `Expired` adds `token` and `deadline` (epoch ms);
/// `InvalidTtl` adds `ttl` (ms).
pub(crate) fn err(e: LockError) -> JsValue {
    let obj: Object = js_sys::Error::new(&e.to_string()).into();
    let name = match &e {
        LockError::InvalidName { .. } => "InvalidNameError",
        LockError::ReservedName { .. } => "ReservedNameError",
        LockError::InvalidOwner { .. } => "InvalidOwnerError",
        LockError::InvalidTtl { ttl, problem } => {
            set(&obj, "ttl", (ttl.as_secs_f64() * 1000.0).into());
            let short = matches!(problem, TtlProblem::TooShortToKeepAlive { .. });
            set(&obj, "tooShortToKeepAlive", short.into());
            "InvalidTtlError"
        }
        LockError::Expired {
            token, deadline, ..
        } => {
            set(&obj, "token", (*token as f64).into());
            set(&obj, "deadline", epoch_ms(*deadline).into());
            "ExpiredError"
        }
        LockError::CapacityExceeded { .. } => "CapacityError",
        LockError::Unavailable { .. } => "UnavailableError",
        _ => "LockError",
    };
    set(&obj, "name", name.into());
    obj.into()
}

/// An `Unavailable` error with this reason, as JavaScript.
pub(crate) fn unavailable(reason: &str) -> JsValue {
    err(LockError::Unavailable {
        reason: reason.into(),
    })
}

/// A JavaScript `TypeError` with this message.
pub(crate) fn type_error(message: &str) -> JsValue {
    js_sys::TypeError::new(message).into()
}

/// A JavaScript `Error` named `InvalidStateError`, for a lease used after its release.
pub(crate) fn released() -> JsValue {
    let obj: Object = js_sys::Error::new("the lease was released (or detached) already").into();
    set(&obj, "name", "InvalidStateError".into());
    obj.into()
}

/// A token as a JavaScript number, checked below 2^53 (the engine never grants more: its
/// counter refuses to pass 2^53 - 1).
pub(crate) fn token_js(token: u64) -> Result<f64, JsValue> {
    if token > MAX_SAFE {
        return Err(unavailable(&format!(
            "fencing token {token} does not fit a JavaScript number exactly"
        )));
    }
    Ok(token as f64)
}

/// A JavaScript number as a token: an integer in 0..=2^53 - 1, else a `TypeError`.
pub(crate) fn token_from_js(token: f64) -> Result<u64, JsValue> {
    if !(token.is_finite() && token.fract() == 0.0 && (0.0..=MAX_SAFE as f64).contains(&token)) {
        return Err(type_error(&format!(
            "a fencing token is an integer from 0 to 2^53 - 1, not {token}"
        )));
    }
    Ok(token as u64)
}

/// A timestamp on the engine's clock (ns since the Unix epoch) as epoch milliseconds.
pub(crate) fn epoch_ms(t: Timestamp) -> f64 {
    t.as_nanos() as f64 / 1e6
}

/// Milliseconds as a `Duration`: NaN and negatives count as zero, and anything above a
/// century is cut to a century (the engine refuses a clock past 2155 anyway).
pub(crate) fn ms(millis: f64) -> Duration {
    const CENTURY_MS: f64 = 100.0 * 365.25 * 86_400.0 * 1000.0;
    let millis = if millis.is_nan() {
        0.0
    } else {
        millis.clamp(0.0, CENTURY_MS)
    };
    Duration::from_secs_f64(millis / 1000.0)
}

/// Sets `key` on `obj` (a plain object: it cannot fail).
pub(crate) fn set(obj: &Object, key: &str, value: JsValue) {
    let _ = Reflect::set(obj, &JsValue::from_str(key), &value);
}

/// A lease as `{ name, owner, token, deadline }` (deadline in epoch ms).
pub(crate) fn info_js(lease: &LeaseInfo) -> Result<JsValue, JsValue> {
    let obj = Object::new();
    set(&obj, "name", lease.name().into());
    set(&obj, "owner", lease.owner().into());
    set(&obj, "token", token_js(lease.token())?.into());
    set(&obj, "deadline", epoch_ms(lease.deadline()).into());
    Ok(obj.into())
}
