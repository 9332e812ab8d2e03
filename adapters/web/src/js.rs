//! The browser backend (wasm32): `performance.now()`, `Date.now()` and `setTimeout`.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use alkstore_mem::Timestamp;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::millis::{millis_f64_until, timestamp_from_millis_f64};

#[wasm_bindgen]
extern "C" {
    /// The global scope's `performance` object (window or worker).
    #[derive(Clone, Debug)]
    type Performance;

    #[wasm_bindgen(method, js_name = now)]
    fn now(this: &Performance) -> f64;

    // The global scope's timers: present in windows and workers alike.
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &js_sys::Function, millis: f64) -> JsValue;

    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue);
}

/// `Date.now()` as a [`Timestamp`].
pub(crate) fn date_now() -> Timestamp {
    timestamp_from_millis_f64(js_sys::Date::now())
}

/// What a `PerformanceClock` reads: the global `performance`, or `None` for `Date.now()`.
#[derive(Clone, Debug)]
pub(crate) struct PerformanceSource {
    performance: Option<Performance>,
}

impl PerformanceSource {
    pub(crate) fn new() -> Self {
        PerformanceSource {
            performance: global_performance(),
        }
    }

    pub(crate) fn try_new() -> Option<Self> {
        global_performance().map(|performance| PerformanceSource {
            performance: Some(performance),
        })
    }

    pub(crate) fn is_monotonic(&self) -> bool {
        self.performance.is_some()
    }

    pub(crate) fn now(&self) -> Timestamp {
        let millis = match &self.performance {
            Some(performance) => performance.now(),
            None => js_sys::Date::now(),
        };
        timestamp_from_millis_f64(millis)
    }
}

/// The global scope's `performance`, if it is an object with a `now` function.
fn global_performance() -> Option<Performance> {
    let global = js_sys::global();
    let performance = js_sys::Reflect::get(&global, &JsValue::from_str("performance")).ok()?;
    if !performance.is_object() {
        return None;
    }
    let now = js_sys::Reflect::get(&performance, &JsValue::from_str("now")).ok()?;
    now.is_function().then(|| performance.unchecked_into())
}

/// A `setTimeout` promise, cleared if dropped before it fired.
#[derive(Debug)]
pub(crate) struct Sleep {
    promise: JsFuture,
    timeout_id: JsValue,
    done: bool,
}

impl Sleep {
    pub(crate) fn new(millis: f64) -> Self {
        let mut timeout_id = JsValue::UNDEFINED;
        let promise = js_sys::Promise::new(&mut |resolve, _reject| {
            timeout_id = set_timeout(&resolve, millis);
        });
        Sleep {
            promise: JsFuture::from(promise),
            timeout_id,
            done: false,
        }
    }

    /// Rounded up to whole milliseconds and capped at `setTimeout`'s limit.
    pub(crate) fn until(now: Timestamp, deadline: Timestamp) -> Self {
        Self::new(millis_f64_until(now, deadline))
    }

    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match Pin::new(&mut self.promise).poll(cx) {
            Poll::Ready(_) => {
                self.done = true;
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if !self.done {
            clear_timeout(&self.timeout_id);
        }
    }
}
