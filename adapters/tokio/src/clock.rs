//! [`TokioClock`]: the core's [`Clock`] on [`tokio::time::Instant`].

use alkstore_mem::{Clock, Timer, Timestamp};
use tokio::time::{Instant, Sleep};

/// A [`Clock`] reading [`tokio::time::Instant`], as nanoseconds since the clock was created.
///
/// Monotonic, and a [`Timer`] (on `tokio::time::sleep_until`), so
/// [`LockRegistry::acquire`](alkstore_mem::LockRegistry::acquire) works on it. Under tokio's paused time (`start_paused = true`, or `tokio::time::pause`)
/// it stands still until the runtime advances it, so tests drive lease expiry exactly.
/// Clones share the anchor, and so read the same time. Create it inside the runtime when
/// you use paused time, so that the anchor is on the paused timeline.
///
/// # Example
/// ```
/// use alkstore_mem_tokio::{Clock, TokioClock};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let clock = TokioClock::new();
/// tokio::time::advance(Duration::from_millis(250)).await;
/// assert_eq!(clock.now().as_millis(), 250);
/// # }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct TokioClock {
    origin: Instant,
}

impl TokioClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        TokioClock {
            origin: Instant::now(),
        }
    }

    /// The instant this clock's readings count from.
    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// The [`Instant`] of a reading of this clock, saturating far in the future.
    pub fn instant_at(&self, at: Timestamp) -> Instant {
        self.origin
            .checked_add(at.as_duration())
            .unwrap_or_else(|| far_future(self.origin))
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Timestamp {
        let nanos = self.origin.elapsed().as_nanos();
        Timestamp::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

/// Sleeps with [`tokio::time::sleep_until`], so waiting `acquire` calls follow paused time in
/// tests too. Sleeps must be polled inside a tokio runtime with the time driver enabled.
impl Timer for TokioClock {
    type Sleep = Sleep;

    fn sleep_until(&self, deadline: Timestamp) -> Sleep {
        tokio::time::sleep_until(self.instant_at(deadline))
    }
}

/// About thirty years after `origin`, the way tokio itself spells "never".
fn far_future(origin: Instant) -> Instant {
    origin + std::time::Duration::from_secs(86_400 * 365 * 30)
}
