//! This context's view of the engine's clock: the time its last transaction decided at,
//! carried forward by the monotonic clock (`performance.now()`), so that a system clock
//! stepping back neither stalls this context's leases nor hides a lost one from it.

use core::cell::Cell;

use alkstore_mem::Clock;
use alkstore_mem_web::PerformanceClock;

use super::basics::date_now_us;
use crate::tx::ops::Clocks;

/// What the carried-forward reading gives up, in µs: `Date.now()` truncates to the
/// millisecond and `performance.now()` is coarsened (Chromium: 100 µs, with jitter), so a
/// reading carried forward can run up to about 1.1 ms ahead of `Date.now()` with a right
/// clock; less 2 ms, it never does, and it takes over only from a clock that fell behind.
const SLACK_US: u64 = 2_000;

/// One database's anchor in this context.
pub(crate) struct EngineClock {
    mono: PerformanceClock,
    /// The engine time of the last reading and the monotonic time it was taken at (µs).
    anchor: Cell<Option<(u64, u64)>>,
    /// The test clock's offset as last read (0 outside test builds).
    offset: Cell<u64>,
}

impl EngineClock {
    pub(crate) fn new() -> Self {
        EngineClock {
            mono: PerformanceClock::new(),
            anchor: Cell::new(None),
            offset: Cell::new(0),
        }
    }

    /// The monotonic clock in µs (`performance.now()`; `Date.now()` where a scope has none).
    pub(crate) fn mono_us(&self) -> u64 {
        self.mono.now().as_nanos() / 1000
    }

    /// The last reading carried forward to monotonic time `mono`, less [`SLACK_US`] (0
    /// before any reading).
    fn anchored(&self, mono: u64) -> u64 {
        self.anchor.get().map_or(0, |(now, at)| {
            now.saturating_add(mono.saturating_sub(at))
                .saturating_sub(SLACK_US)
        })
    }

    /// What a transaction deciding now reads (taken together, in its success handler), and
    /// the monotonic time, to [`record`](Self::record) once it decided.
    pub(crate) fn read(&self) -> (Clocks, u64) {
        let mono = self.mono_us();
        let clocks = Clocks {
            date_now: date_now_us(),
            anchored: self.anchored(mono),
            test_clock: cfg!(feature = "test-clock"),
        };
        (clocks, mono)
    }

    /// A transaction decided at engine time `now`, read at monotonic time `mono`.
    pub(crate) fn record(&self, now: u64, mono: u64, offset: u64) {
        self.anchor.set(Some((now, mono)));
        self.offset.set(offset);
    }

    /// The engine's time as this context estimates it: the later of `Date.now()` (+ the test
    /// offset last seen) and the last reading carried forward by the monotonic clock, as its
    /// transactions decide (so a lease never looks live here after they found it lapsed).
    pub(crate) fn now_us(&self) -> u64 {
        let mono = self.mono_us();
        date_now_us()
            .saturating_add(self.offset.get())
            .max(self.anchored(mono))
    }
}
