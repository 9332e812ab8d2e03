//! [`Anchor`]: a reading of the engine's clock tied to the local instant its request was sent,
//! so that a handle can estimate the engine's time without asking.

use std::time::Duration;

use tokio::time::Instant;

use alkstore_mem::Timestamp;

/// A reply's reading of the engine's lease clock, with the local instant its request was
/// SENT at, on tokio's clock: the one the kit's timers sleep on (under tokio's paused test
/// clock, estimates and sleeps move together).
///
/// The engine read its clock after the request left (and the reply took time to come back),
/// so `server + (now - sent)` is never behind the engine's real time: the estimate errs
/// early, never late. A deadline that has passed by it may still be a little ahead on the
/// engine; one that has not passed by it has not passed there either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Anchor {
    pub(crate) server: Timestamp,
    pub(crate) local: Instant,
}

impl Anchor {
    /// The engine's reading `server` of a request sent at `sent`.
    pub(crate) fn new(server: Timestamp, sent: Instant) -> Self {
        Anchor {
            server,
            local: sent,
        }
    }

    /// The engine's time now, as estimated from this reading (never behind it).
    pub(crate) fn estimate(&self) -> Timestamp {
        self.server.saturating_add(self.local.elapsed())
    }

    /// How long until `at` on the engine's clock, as estimated from this reading.
    pub(crate) fn until(&self, at: Timestamp) -> Duration {
        at.saturating_duration_since(self.estimate())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_moves_with_local_time_and_never_goes_back() {
        let sent = Instant::now();
        let anchor = Anchor::new(Timestamp::from_nanos(1_000), sent);
        let first = anchor.estimate();
        assert!(first >= Timestamp::from_nanos(1_000));
        std::thread::sleep(Duration::from_millis(2));
        assert!(anchor.estimate() > first);
        assert_eq!(anchor.until(Timestamp::from_nanos(0)), Duration::ZERO);
        let far = Anchor::new(Timestamp::from_nanos(u64::MAX), sent);
        assert_eq!(far.estimate(), Timestamp::from_nanos(u64::MAX));
    }
}
