//! [`TimeoutSleep`]: the browser clocks' [`Timer`] sleeps, on `setTimeout`.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use alkstore_mem::{Clock, Timer, Timestamp};

use crate::clocks::{DateClock, PerformanceClock};
use crate::sys;

/// A sleep on a browser clock: a `setTimeout` timer, cleared if the sleep is dropped first.
///
/// The delay is the clock's distance to the deadline, rounded up to whole milliseconds and
/// capped at `setTimeout`'s limit (2^31 - 1 ms); waiting code rechecks the clock when it
/// ends, so a capped or throttled timer only costs another sleep.
///
/// # Targets
/// On `wasm32` it is the `setTimeout` timer above, whose handler wakes the sleep. Elsewhere it is a stand-in for host
/// tooling and tests that needs no async runtime: the sleep registers its deadline (an
/// [`std::time::Instant`], to the nanosecond) with one process-wide timer thread, started by
/// the first sleep that has to wait, which wakes it when the deadline has passed. Dropping the
/// sleep removes its deadline, so a dropped sleep is never woken. Production servers should
/// use `alkstore-mem-tokio` instead.
///
/// # Example
/// ```
/// use alkstore_mem_web::{Clock, PerformanceClock, Timer};
/// use core::time::Duration;
///
/// # async fn demo() {
/// let clock = PerformanceClock::new();
/// let deadline = clock.now().saturating_add(Duration::from_millis(10));
/// clock.sleep_until(deadline).await;
/// assert!(clock.now() >= deadline);
/// # }
/// # #[cfg(not(target_arch = "wasm32"))]
/// # futures_lite::future::block_on(demo());
/// ```
#[must_use = "a sleep does nothing unless polled"]
#[derive(Debug)]
pub struct TimeoutSleep {
    inner: sys::Sleep,
}

impl TimeoutSleep {
    /// A sleep of `millis` milliseconds (rounded up by the browser to its timer resolution).
    /// A NaN or negative `millis` counts as zero.
    pub fn new(millis: f64) -> Self {
        TimeoutSleep {
            inner: sys::Sleep::new(millis),
        }
    }

    fn until(now: Timestamp, deadline: Timestamp) -> Self {
        TimeoutSleep {
            inner: sys::Sleep::until(now, deadline),
        }
    }
}

impl Future for TimeoutSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.inner.poll(cx)
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
