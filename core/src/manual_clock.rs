//! [`ManualClock`]: a clock that moves only when told to, for deterministic tests, and its
//! [`ManualSleep`] futures.

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::sync::atomic::{AtomicU64, Ordering};
use core::task::{Context, Poll, Waker};
use core::time::Duration;

use crate::sync::Mutex;
use crate::time::{Clock, Timestamp};
use crate::timer::Timer;
use crate::wake::wake_all;

/// A clock that stands still until [`set`](ManualClock::set) or
/// [`advance`](ManualClock::advance) moves it.
///
/// Clones share one time, so a test keeps a clone and moves the clock that a
/// [`LockRegistry`](crate::LockRegistry) reads. It starts at [`Timestamp::ZERO`].
/// `set` may move time backwards (to test how the core clamps a clock that steps back).
///
/// It is also a [`Timer`]: its sleeps complete when `set` or `advance` moves the clock to or
/// past their deadline, and exactly those are woken, so waiting can be tested without any
/// runtime.
///
/// # Example
/// ```
/// use alkstore_mem::{Clock, LockRegistry, ManualClock};
/// use core::time::Duration;
///
/// let clock = ManualClock::new();
/// let registry = LockRegistry::new(clock.clone());
/// let lock = registry.try_lock("job", "worker-1", Duration::from_secs(5)).unwrap().unwrap();
/// clock.advance(Duration::from_secs(5));
/// assert!(!lock.is_held(), "the lease lapses exactly at its deadline");
/// assert_eq!(clock.now().as_millis(), 5_000);
/// ```
#[derive(Clone, Default)]
pub struct ManualClock {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    nanos: AtomicU64,
    next_sleep_id: AtomicU64,
    /// The pending [`ManualSleep`]s that have been polled, by deadline and id, with whom to
    /// wake. No waker is cloned, woken or dropped while this mutex is held.
    sleepers: Mutex<BTreeMap<(Timestamp, u64), Waker>>,
}

impl ManualClock {
    /// A clock at [`Timestamp::ZERO`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock to `now` (forwards or backwards), then wakes the sleeps that are due.
    pub fn set(&self, now: Timestamp) {
        self.inner.nanos.store(now.as_nanos(), Ordering::SeqCst);
        self.wake_due();
    }

    /// Moves the clock forwards by `by`, saturating at [`Timestamp::MAX`], then wakes the
    /// sleeps that are due.
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .inner
            .nanos
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_add(by))
            });
        self.wake_due();
    }

    /// How many sleeps are waiting for this clock to move (polled, not yet due, not dropped).
    pub fn pending_sleeps(&self) -> usize {
        self.inner.sleepers.lock().len()
    }

    /// The earliest deadline among the pending sleeps: where a test might move the clock next.
    pub fn next_sleep_deadline(&self) -> Option<Timestamp> {
        let sleepers = self.inner.sleepers.lock();
        sleepers.first_key_value().map(|(key, _)| key.0)
    }

    fn wake_due(&self) {
        let now = self.now();
        let due = {
            let mut sleepers = self.inner.sleepers.lock();
            match now.as_nanos().checked_add(1) {
                Some(after) => {
                    let later = sleepers.split_off(&(Timestamp::from_nanos(after), 0));
                    core::mem::replace(&mut *sleepers, later)
                }
                None => core::mem::take(&mut *sleepers),
            }
        };
        // Wake outside the lock: a waker may poll right away, on this thread.
        wake_all(due.into_values());
    }

    /// Forgets sleep `key`, handing back its waker to be dropped outside the lock.
    fn forget(&self, key: (Timestamp, u64)) -> Option<Waker> {
        self.inner.sleepers.lock().remove(&key)
    }
}

impl Clock for ManualClock {
    #[inline]
    fn now(&self) -> Timestamp {
        Timestamp::from_nanos(self.inner.nanos.load(Ordering::SeqCst))
    }
}

impl Timer for ManualClock {
    type Sleep = ManualSleep;

    fn sleep_until(&self, deadline: Timestamp) -> ManualSleep {
        ManualSleep {
            clock: self.clone(),
            deadline,
            id: self.inner.next_sleep_id.fetch_add(1, Ordering::Relaxed),
        }
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock")
            .field("now", &self.now())
            .field("pending_sleeps", &self.pending_sleeps())
            .finish()
    }
}

/// A sleep on a [`ManualClock`]: completes once the clock reads its deadline or later.
/// Dropping it forgets its registration.
#[must_use = "a sleep does nothing unless polled"]
pub struct ManualSleep {
    clock: ManualClock,
    deadline: Timestamp,
    id: u64,
}

impl ManualSleep {
    /// When this sleep completes.
    pub fn deadline(&self) -> Timestamp {
        self.deadline
    }
}

impl Future for ManualSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let key = (this.deadline, this.id);
        if this.clock.now() >= this.deadline {
            drop(this.clock.forget(key));
            return Poll::Ready(());
        }
        // Cloned before the lock, and the waker it replaces dropped after it: both run
        // user code.
        let mut waker = Some(cx.waker().clone());
        let (ready, replaced) = {
            let mut sleepers = this.clock.inner.sleepers.lock();
            // Reading the time under the lock pairs with `wake_due`, which stores the time
            // before it takes the lock: either we see the new time, or it sees our waker.
            if this.clock.now() >= this.deadline {
                (true, sleepers.remove(&key))
            } else {
                (false, waker.take().and_then(|w| sleepers.insert(key, w)))
            }
        };
        drop((replaced, waker));
        if ready {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Drop for ManualSleep {
    fn drop(&mut self) {
        drop(self.clock.forget((self.deadline, self.id)));
    }
}

impl fmt::Debug for ManualSleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualSleep")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;
    use std::vec::Vec;

    struct CountingWaker(AtomicUsize);
    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn advance_wakes_exactly_the_sleeps_that_are_due() {
        let clock = ManualClock::new();
        let counters: Vec<Arc<CountingWaker>> = (0..3)
            .map(|_| Arc::new(CountingWaker(AtomicUsize::new(0))))
            .collect();
        let mut sleeps: Vec<Pin<alloc::boxed::Box<ManualSleep>>> = [10, 20, 30]
            .iter()
            .map(|&ms| alloc::boxed::Box::pin(clock.sleep_until(Timestamp::from_millis(ms))))
            .collect();
        for (sleep, counter) in sleeps.iter_mut().zip(&counters) {
            let waker = Waker::from(counter.clone());
            assert!(
                sleep
                    .as_mut()
                    .poll(&mut Context::from_waker(&waker))
                    .is_pending()
            );
        }
        assert_eq!(clock.pending_sleeps(), 3);
        assert_eq!(
            clock.next_sleep_deadline(),
            Some(Timestamp::from_millis(10))
        );

        clock.advance(Duration::from_millis(20));
        let woken: Vec<usize> = counters
            .iter()
            .map(|c| c.0.load(Ordering::SeqCst))
            .collect();
        assert_eq!(woken, [1, 1, 0]);
        assert_eq!(clock.pending_sleeps(), 1);

        drop(sleeps.pop());
        assert_eq!(
            clock.pending_sleeps(),
            0,
            "a dropped sleep forgets its registration"
        );
    }

    #[test]
    fn block_on_a_sleep_that_another_thread_ends() {
        let clock = ManualClock::new();
        let mover = clock.clone();
        let handle = std::thread::spawn(move || {
            while mover.pending_sleeps() == 0 {
                std::thread::yield_now();
            }
            mover.advance(Duration::from_secs(1));
        });
        futures_lite::future::block_on(clock.sleep_until(Timestamp::from_millis(1_000)));
        handle.join().unwrap();
        assert_eq!(clock.now(), Timestamp::from_millis(1_000));
    }
}
