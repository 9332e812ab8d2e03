//! Waking a batch of wakers after a critical section, robust to a waker that panics.

use core::task::Waker;

/// Wakes every waker of `wakers`, in order. Should one `wake` panic, the ones after it are
/// still woken while the panic unwinds (a second panic during that unwind aborts, as any
/// panic in a drop during an unwind does), so a panicking waker never leaves another task
/// asleep. No `catch_unwind`: the core is `no_std`.
pub(crate) fn wake_all<I: IntoIterator<Item = Waker>>(wakers: I) {
    let mut rest = WakeRest(wakers.into_iter());
    for waker in &mut rest.0 {
        waker.wake();
    }
}

/// Holds the wakers not yet woken; wakes them if dropped early (by an unwind).
struct WakeRest<I: Iterator<Item = Waker>>(I);

impl<I: Iterator<Item = Waker>> Drop for WakeRest<I> {
    fn drop(&mut self) {
        for waker in &mut self.0 {
            waker.wake();
        }
    }
}
