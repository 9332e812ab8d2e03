//! [`TimeoutSleep`]: the browser clocks' [`Timer`](alkstore_mem::Timer) sleeps, on `setTimeout`.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use alkstore_mem::{Clock, Timer, Timestamp};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::clocks::{DateClock, PerformanceClock};
use crate::millis::millis_f64_until;

#[wasm_bindgen]
extern "C" {
    // The global scope's timers: present in windows and workers alike.
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &js_sys::Function, millis: f64) -> JsValue;

    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue);
}

/// A sleep on a browser clock: a `setTimeout` promise, cleared if the sleep is dropped first.
///
/// The delay is the clock's distance to the deadline, rounded up to whole milliseconds and
/// capped at `setTimeout`'s limit (2^31 - 1 ms); waiting code rechecks the clock when it
/// ends, so a capped or throttled timer only costs another sleep.
#[must_use = "a sleep does nothing unless polled"]
#[derive(Debug)]
pub struct TimeoutSleep {
    promise: JsFuture,
    timeout_id: JsValue,
    done: bool,
}

impl TimeoutSleep {
    /// A sleep of `millis` milliseconds (rounded up by the browser to its timer resolution).
    pub fn new(millis: f64) -> Self {
        let mut timeout_id = JsValue::UNDEFINED;
        let promise = js_sys::Promise::new(&mut |resolve, _reject| {
            timeout_id = set_timeout(&resolve, millis);
        });
        TimeoutSleep {
            promise: JsFuture::from(promise),
            timeout_id,
            done: false,
        }
    }

    fn until(now: Timestamp, deadline: Timestamp) -> Self {
        Self::new(millis_f64_until(now, deadline))
    }
}

impl Future for TimeoutSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match Pin::new(&mut self.promise).poll(cx) {
            Poll::Ready(_) => {
                self.done = true;
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for TimeoutSleep {
    fn drop(&mut self) {
        if !self.done {
            clear_timeout(&self.timeout_id);
        }
    }
}

impl Timer for DateClock {
    type Sleep = TimeoutSleep;

    fn sleep_until(&self, deadline: Timestamp) -> TimeoutSleep {
        TimeoutSleep::until(self.now(), deadline)
    }
}

impl Timer for PerformanceClock {
    type Sleep = TimeoutSleep;

    fn sleep_until(&self, deadline: Timestamp) -> TimeoutSleep {
        TimeoutSleep::until(self.now(), deadline)
    }
}
