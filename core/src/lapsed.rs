//! [`Lapsed`]: the future of [`Lock::lapsed`](crate::Lock::lapsed).

use alloc::boxed::Box;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use crate::registry::Lock;
use crate::time::Timestamp;
use crate::timer::Timer;

/// Resolves once a lease is no longer held: the future of [`Lock::lapsed`].
///
/// It sleeps on the clock until the lease's deadline and checks again, so renewals push it
/// out; a [`force_release`](crate::LockRegistry::force_release) wakes it at once. Dropping it
/// forgets its registration.
#[must_use = "futures do nothing unless polled"]
pub struct Lapsed<'a, C: Timer> {
    lock: &'a Lock<C>,
    /// The current sleep and the deadline it ends at.
    sleep: Option<(Timestamp, Pin<Box<C::Sleep>>)>,
    /// Whether the registry keeps this future's waker.
    watching: bool,
}

impl<'a, C: Timer> Lapsed<'a, C> {
    pub(crate) fn new(lock: &'a Lock<C>) -> Self {
        Lapsed {
            lock,
            sleep: None,
            watching: false,
        }
    }
}

impl<C: Timer> Future for Lapsed<'_, C> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        loop {
            // Cloned here, outside the registry's lock: a waker's clone is user code.
            let Some(deadline) = this.lock.watch(cx.waker().clone()) else {
                this.watching = false;
                this.sleep = None;
                return Poll::Ready(());
            };
            this.watching = true;
            let sleep = match &mut this.sleep {
                Some((at, sleep)) if *at == deadline => sleep,
                slot => {
                    let sleep = Box::pin(this.lock.clock().sleep_until(deadline));
                    &mut slot.insert((deadline, sleep)).1
                }
            };
            match sleep.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                // The deadline came: look again (a renewal may have moved it).
                Poll::Ready(()) => this.sleep = None,
            }
        }
    }
}

impl<C: Timer> Drop for Lapsed<'_, C> {
    fn drop(&mut self) {
        if self.watching {
            self.lock.unwatch();
        }
    }
}

impl<C: Timer> fmt::Debug for Lapsed<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lapsed")
            .field("token", &self.lock.token())
            .field("sleeping_until", &self.sleep.as_ref().map(|s| s.0))
            .finish()
    }
}
