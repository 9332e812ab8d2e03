//! The browser backend (wasm32): `performance.now()`, `Date.now()` and `setTimeout`.

use core::cell::Cell;
use core::fmt;
use core::task::{Context, Poll, Waker};
use std::rc::Rc;

use alkstore_mem::Timestamp;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

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

/// A `setTimeout` whose callback wakes the sleep's latest waker; cleared if dropped before
/// it fired. A plain callback rather than a promise: no `Promise` or `JsFuture` per sleep,
/// and a smaller `.wasm`.
pub(crate) struct Sleep {
    fired: Rc<Fired>,
    timeout_id: JsValue,
    /// The `setTimeout` handler: kept alive until the timer fired or was cleared.
    _callback: Closure<dyn FnMut()>,
}

/// What the handler shares with its sleep.
#[derive(Default)]
struct Fired {
    fired: Cell<bool>,
    waker: Cell<Option<Waker>>,
}

impl Sleep {
    pub(crate) fn new(millis: f64) -> Self {
        let fired = Rc::new(Fired::default());
        let handler = Rc::clone(&fired);
        let callback = Closure::<dyn FnMut()>::new(move || {
            handler.fired.set(true);
            if let Some(waker) = handler.waker.take() {
                waker.wake();
            }
        });
        let timeout_id = set_timeout(callback.as_ref().unchecked_ref(), millis);
        Sleep {
            fired,
            timeout_id,
            _callback: callback,
        }
    }

    /// Rounded up to whole milliseconds and capped at `setTimeout`'s limit.
    pub(crate) fn until(now: Timestamp, deadline: Timestamp) -> Self {
        Self::new(millis_f64_until(now, deadline))
    }

    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.fired.fired.get() {
            return Poll::Ready(());
        }
        self.fired.waker.set(Some(cx.waker().clone()));
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        // Cleared before the handler is dropped, so it never runs after that.
        if !self.fired.fired.get() {
            clear_timeout(&self.timeout_id);
        }
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("fired", &self.fired.fired.get())
            .field("timeout_id", &self.timeout_id)
            .finish_non_exhaustive()
    }
}
