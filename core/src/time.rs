//! Time as the core sees it: a [`Timestamp`] reading and the [`Clock`] that produces it.
//!
//! The core never reads a system clock. Every operation of [`LockTable`](crate::LockTable)
//! takes `now` as an argument, and [`LockRegistry`](crate::LockRegistry) reads its injected
//! clock exactly once per operation.

use alloc::sync::Arc;
use core::fmt;
use core::time::Duration;

/// A reading of a [`Clock`]: nanoseconds on that clock's own timeline.
///
/// Timestamps from different clocks are not comparable; the origin is whatever the clock
/// chose (the moment it was created, the page's time origin, the Unix epoch, …).
/// All arithmetic saturates: a `u64` of nanoseconds lasts 584 years, so saturation only
/// matters for absurd inputs such as `Duration::MAX`, which then never panic or wrap.
///
/// # Example
/// ```
/// use alkstore_mem::Timestamp;
/// use core::time::Duration;
///
/// let t = Timestamp::from_millis(1_500);
/// assert_eq!(t.as_nanos(), 1_500_000_000);
/// assert_eq!(t.saturating_add(Duration::from_millis(500)).as_millis(), 2_000);
/// assert_eq!(Timestamp::MAX.saturating_add(Duration::MAX), Timestamp::MAX);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(transparent)
)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The clock's origin.
    pub const ZERO: Timestamp = Timestamp(0);
    /// The latest representable reading; `saturating_add` stops here.
    pub const MAX: Timestamp = Timestamp(u64::MAX);

    /// A timestamp `nanos` nanoseconds after the clock's origin.
    pub const fn from_nanos(nanos: u64) -> Self {
        Timestamp(nanos)
    }

    /// A timestamp `millis` milliseconds after the clock's origin, saturating at [`Timestamp::MAX`].
    pub const fn from_millis(millis: u64) -> Self {
        Timestamp(millis.saturating_mul(1_000_000))
    }

    /// Nanoseconds since the clock's origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Whole milliseconds since the clock's origin (rounded down).
    pub const fn as_millis(self) -> u64 {
        self.0 / 1_000_000
    }

    /// `self + duration`, or [`Timestamp::MAX`] if that does not fit.
    pub const fn saturating_add(self, duration: Duration) -> Self {
        let nanos = duration.as_nanos();
        if nanos > u64::MAX as u128 {
            Timestamp::MAX
        } else {
            Timestamp(self.0.saturating_add(nanos as u64))
        }
    }

    /// `self - duration`, or [`Timestamp::ZERO`] if that would be before it.
    pub const fn saturating_sub(self, duration: Duration) -> Self {
        let nanos = duration.as_nanos();
        if nanos > u64::MAX as u128 {
            Timestamp::ZERO
        } else {
            Timestamp(self.0.saturating_sub(nanos as u64))
        }
    }

    /// `self + duration`, or `None` if that does not fit.
    pub const fn checked_add(self, duration: Duration) -> Option<Self> {
        let nanos = duration.as_nanos();
        if nanos > u64::MAX as u128 {
            return None;
        }
        match self.0.checked_add(nanos as u64) {
            Some(n) => Some(Timestamp(n)),
            None => None,
        }
    }

    /// The time from `earlier` to `self`, or zero if `earlier` is later than `self`.
    pub const fn saturating_duration_since(self, earlier: Timestamp) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// The time elapsed since the clock's origin.
    pub const fn as_duration(self) -> Duration {
        Duration::from_nanos(self.0)
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({:?})", Duration::from_nanos(self.0))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", Duration::from_nanos(self.0))
    }
}

/// Whether a lease with this deadline is live at `now`: while `now < deadline`, and forever
/// when the deadline is [`Timestamp::MAX`]. A deadline that saturated (a huge ttl, or a clock
/// reading near `u64::MAX`) so never lapses: a grant is never handed out already lapsed, and
/// exclusion holds even when the clock itself reads `MAX`.
#[inline]
pub(crate) const fn live(deadline: Timestamp, now: Timestamp) -> bool {
    deadline.0 > now.0 || deadline.0 == u64::MAX
}

/// A source of [`Timestamp`]s.
///
/// # What the core assumes
/// - A clock SHOULD be monotonic. The core does not require it: a [`LockTable`](crate::LockTable)
///   remembers the latest reading it has seen and clamps earlier readings to it, so time as the
///   table sees it never moves backwards; a [`LockRegistry`](crate::LockRegistry) keeps one
///   such floor for all its shards, so an earlier reading is clamped to the latest reading any
///   accepted operation on any name has seen. A lease that was seen lapsed stays lapsed, and
///   nothing panics, when a wall clock (such as the browser's `Date.now()`) steps back.
///   While the clock is behind, leases simply do not age until it catches up.
/// - `now` MUST NOT panic and SHOULD be cheap: it is called once per registry operation,
///   outside any lock's critical section being held by the caller.
/// - Readings are nanoseconds on the clock's own timeline; only differences matter.
///
/// # Example
/// ```
/// use alkstore_mem::{Clock, Timestamp};
///
/// /// A clock that is always at 42 ms (real clocks are rarely this patient).
/// struct Frozen;
/// impl Clock for Frozen {
///     fn now(&self) -> Timestamp {
///         Timestamp::from_millis(42)
///     }
/// }
/// assert_eq!(Frozen.now().as_millis(), 42);
/// ```
pub trait Clock {
    /// The current reading.
    fn now(&self) -> Timestamp;
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> Timestamp {
        (**self).now()
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> Timestamp {
        (**self).now()
    }
}
