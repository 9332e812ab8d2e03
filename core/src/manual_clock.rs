//! [`ManualClock`]: a clock that moves only when told to, for deterministic tests.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;

use crate::time::{Clock, Timestamp};

/// A clock that stands still until [`set`](ManualClock::set) or
/// [`advance`](ManualClock::advance) moves it.
///
/// Clones share one time, so a test keeps a clone and moves the clock that a
/// [`LockRegistry`](crate::LockRegistry) reads. It starts at [`Timestamp::ZERO`].
/// `set` may move time backwards (to test how the core clamps a clock that steps back).
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
    pub(crate) inner: Arc<ManualClockInner>,
}

#[derive(Default)]
pub(crate) struct ManualClockInner {
    pub(crate) nanos: AtomicU64,
}

impl ManualClock {
    /// A clock at [`Timestamp::ZERO`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock to `now` (forwards or backwards).
    pub fn set(&self, now: Timestamp) {
        self.inner.nanos.store(now.as_nanos(), Ordering::SeqCst);
        self.after_move();
    }

    /// Moves the clock forwards by `by`, saturating at [`Timestamp::MAX`].
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .inner
            .nanos
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_add(by))
            });
        self.after_move();
    }

    #[inline]
    fn after_move(&self) {}
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_nanos(self.inner.nanos.load(Ordering::SeqCst))
    }
}

impl core::fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ManualClock")
            .field("now", &self.now())
            .finish()
    }
}
