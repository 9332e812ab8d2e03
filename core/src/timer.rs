//! [`Timer`]: a [`Clock`] that can also sleep, which is what waiting for a lock needs.

use alloc::sync::Arc;
use core::future::Future;

use crate::time::{Clock, Timestamp};

/// A [`Clock`] that can sleep until one of its own readings.
///
/// [`LockRegistry::acquire`](crate::LockRegistry::acquire) is available on registries whose
/// clock is a `Timer`. The waiting logic rechecks the clock itself when a sleep ends, so a
/// sleep MAY end early or late (a timer's granularity, a browser throttling a background
/// tab): an early end costs another sleep, a late one delays the waiter, neither breaks the
/// contract. A sleep MUST end eventually once the clock reads `deadline` or later, and MUST
/// cancel its timer, if it has one, when dropped.
///
/// Implemented by [`ManualClock`](crate::ManualClock) (sleeps end when the test moves the
/// clock), by `TokioClock` (`tokio::time::sleep_until`) and by the browser clocks (`setTimeout`).
///
/// # Example
/// ```
/// use alkstore_mem::{ManualClock, Timer, Timestamp};
/// use core::pin::pin;
/// use core::task::{Context, Poll, Waker};
///
/// let clock = ManualClock::new();
/// let mut sleep = pin!(clock.sleep_until(Timestamp::from_millis(10)));
/// let mut cx = Context::from_waker(Waker::noop());
/// assert!(sleep.as_mut().poll(&mut cx).is_pending());
/// clock.set(Timestamp::from_millis(10));
/// assert!(sleep.as_mut().poll(&mut cx).is_ready());
/// ```
pub trait Timer: Clock {
    /// The future `sleep_until` returns.
    type Sleep: Future<Output = ()>;

    /// A future that completes when this clock reads `deadline` or later.
    fn sleep_until(&self, deadline: Timestamp) -> Self::Sleep;
}

impl<T: Timer + ?Sized> Timer for &T {
    type Sleep = T::Sleep;

    fn sleep_until(&self, deadline: Timestamp) -> Self::Sleep {
        (**self).sleep_until(deadline)
    }
}

impl<T: Timer + ?Sized> Timer for Arc<T> {
    type Sleep = T::Sleep;

    fn sleep_until(&self, deadline: Timestamp) -> Self::Sleep {
        (**self).sleep_until(deadline)
    }
}
