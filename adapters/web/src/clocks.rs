//! The browser clocks (wasm32 only): [`PerformanceClock`] and [`DateClock`].

use alkstore_mem::{Clock, Timestamp};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

use crate::millis::timestamp_from_millis_f64;

#[wasm_bindgen]
extern "C" {
    /// The global scope's `performance` object (window or worker).
    #[derive(Clone, Debug)]
    type Performance;

    #[wasm_bindgen(method, js_name = now)]
    fn now(this: &Performance) -> f64;
}

/// A [`Clock`] on `Date.now()`: wall-clock milliseconds since the Unix epoch.
///
/// Millisecond resolution. A wall clock can step backwards (NTP corrections, the user
/// setting the time); the core clamps every reading to the latest one it has seen, so a
/// lease seen lapsed stays lapsed and nothing panics, while leases stop aging until the
/// clock catches up again. Prefer [`PerformanceClock`] where it exists.
#[derive(Clone, Copy, Debug, Default)]
pub struct DateClock;

impl DateClock {
    /// The clock. It holds nothing: every reading calls `Date.now()`.
    pub fn new() -> Self {
        DateClock
    }
}

impl Clock for DateClock {
    fn now(&self) -> Timestamp {
        timestamp_from_millis_f64(js_sys::Date::now())
    }
}

/// A [`Clock`] on `performance.now()`, taken from the global scope so that it works in a
/// window and in a worker: monotonic, with the sub-millisecond resolution the browser allows.
///
/// Where the global scope has no usable `performance` object (some embedded JS runtimes),
/// [`try_new`](Self::try_new) returns `None` and [`new`](Self::new) falls back to
/// `Date.now()`, as [`DateClock`] does, with its caveats; [`is_monotonic`](Self::is_monotonic)
/// tells which one you got. No call throws a JavaScript exception.
#[derive(Clone, Debug)]
pub struct PerformanceClock {
    /// `None`: the fallback to `Date.now()`.
    performance: Option<Performance>,
}

impl PerformanceClock {
    /// `performance.now()` where the global scope has it, `Date.now()` otherwise.
    pub fn new() -> Self {
        PerformanceClock {
            performance: global_performance(),
        }
    }

    /// `performance.now()`, or `None` where the global scope has no `performance.now`.
    pub fn try_new() -> Option<Self> {
        global_performance().map(|performance| PerformanceClock {
            performance: Some(performance),
        })
    }

    /// `true` when this clock reads `performance.now()`, `false` when it fell back to
    /// `Date.now()`.
    pub fn is_monotonic(&self) -> bool {
        self.performance.is_some()
    }
}

impl Default for PerformanceClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for PerformanceClock {
    fn now(&self) -> Timestamp {
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
