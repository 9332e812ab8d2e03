//! [`Traced`]: a `ManualClock` whose sleeps can be told apart by whom they wake, so that the
//! model test can ask which sleep each waiter has registered.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use alkstore_mem::{Clock, ManualClock, ManualSleep, Timer, Timestamp};

/// The sleeps pending after their last poll, by id: their deadline and the waker they were
/// polled with.
type Sleeps = Arc<Mutex<BTreeMap<u64, (Timestamp, Waker)>>>;

/// A [`ManualClock`] (moved through [`clock`](Self::clock)) that records its sleeps.
#[derive(Clone, Default)]
pub struct Traced {
    pub clock: ManualClock,
    sleeps: Sleeps,
    next_id: Arc<AtomicU64>,
}

impl Traced {
    /// The earliest deadline among the pending sleeps last polled with `waker` (a sleep
    /// the clock has passed counts until it is polled again or dropped; its waker was woken).
    pub fn sleep_of(&self, waker: &Waker) -> Option<Timestamp> {
        let sleeps = self.sleeps.lock().unwrap();
        (sleeps.values())
            .filter(|(_, w)| w.will_wake(waker))
            .map(|&(deadline, _)| deadline)
            .min()
    }
}

impl Clock for Traced {
    fn now(&self) -> Timestamp {
        self.clock.now()
    }
}

impl Timer for Traced {
    type Sleep = TracedSleep;

    fn sleep_until(&self, deadline: Timestamp) -> TracedSleep {
        TracedSleep {
            inner: self.clock.sleep_until(deadline),
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            sleeps: Arc::clone(&self.sleeps),
        }
    }
}

/// A [`ManualSleep`] that records itself while pending.
pub struct TracedSleep {
    inner: ManualSleep,
    id: u64,
    sleeps: Sleeps,
}

impl Future for TracedSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll(cx);
        let mut sleeps = this.sleeps.lock().unwrap();
        match polled {
            Poll::Ready(()) => drop(sleeps.remove(&this.id)),
            Poll::Pending => {
                let entry = (this.inner.deadline(), cx.waker().clone());
                drop(sleeps.insert(this.id, entry));
            }
        }
        polled
    }
}

impl Drop for TracedSleep {
    fn drop(&mut self) {
        if let Ok(mut sleeps) = self.sleeps.lock() {
            sleeps.remove(&self.id);
        }
    }
}
