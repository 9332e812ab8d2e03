//! The browser clocks, [`PerformanceClock`] and [`DateClock`], on every target.

use alkstore_mem::{Clock, Timestamp};

use crate::sys;

/// A [`Clock`] on `Date.now()`: wall-clock time since the Unix epoch.
///
/// A wall clock can step backwards (NTP corrections, the user setting the time); the core
/// clamps every reading to the latest one it has seen, so a lease seen lapsed stays lapsed and
/// nothing panics, while leases stop aging until the clock catches up again. Prefer
/// [`PerformanceClock`] where it exists.
///
/// # Targets
/// On `wasm32` it reads `Date.now()` (millisecond resolution). Elsewhere it is a stand-in for
/// host tooling and tests: `SystemTime` since `UNIX_EPOCH`, at the resolution the OS gives.
///
/// # Example
/// ```
/// use alkstore_mem_web::{Clock, DateClock};
///
/// // Some time after 2020-09-13, in milliseconds since the Unix epoch.
/// assert!(DateClock::new().now().as_millis() > 1_600_000_000_000);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct DateClock;

impl DateClock {
    /// The clock. It holds nothing: every reading calls `Date.now()` (natively, `SystemTime::now()`).
    pub fn new() -> Self {
        DateClock
    }
}

impl Clock for DateClock {
    fn now(&self) -> Timestamp {
        sys::date_now()
    }
}

/// A [`Clock`] on `performance.now()`, taken from the global scope so that it works in a
/// window and in a worker: monotonic, with the sub-millisecond resolution the browser allows.
///
/// Where the global scope has no usable `performance` object (some embedded JS runtimes),
/// [`try_new`](Self::try_new) returns `None` and [`new`](Self::new) falls back to
/// `Date.now()`, as [`DateClock`] does, with its caveats; [`is_monotonic`](Self::is_monotonic)
/// tells which one you got. No call throws a JavaScript exception.
///
/// # Targets
/// On `wasm32` it reads `performance.now()` as above. Elsewhere it is a stand-in with the
/// same API, so that rust-analyzer, `cargo check` and native tests work on code written for
/// the browser: a monotonic [`std::time::Instant`] since a process-wide origin (set by the
/// first `PerformanceClock` created), [`try_new`](Self::try_new) always returns `Some`, and
/// [`is_monotonic`](Self::is_monotonic) is `true`. Its sleeps run on one shared timer thread
/// (see [`TimeoutSleep`](crate::TimeoutSleep)): fine for tools and tests, not meant for
/// production servers, which should use `alkstore-mem-tokio`.
///
/// # Example
/// ```
/// use alkstore_mem_web::{Clock, PerformanceClock};
///
/// let clock = PerformanceClock::new();
/// let before = clock.now();
/// assert!(clock.now() >= before, "monotonic");
/// # assert!(clock.is_monotonic());
/// ```
#[derive(Clone, Debug)]
pub struct PerformanceClock {
    source: sys::PerformanceSource,
}

impl PerformanceClock {
    /// `performance.now()` where the global scope has it, `Date.now()` otherwise.
    pub fn new() -> Self {
        PerformanceClock {
            source: sys::PerformanceSource::new(),
        }
    }

    /// `performance.now()`, or `None` where the global scope has no `performance.now`.
    /// Always `Some` on targets other than `wasm32`.
    pub fn try_new() -> Option<Self> {
        sys::PerformanceSource::try_new().map(|source| PerformanceClock { source })
    }

    /// `true` when this clock reads `performance.now()` (or, natively, `Instant`), `false`
    /// when it fell back to `Date.now()`.
    pub fn is_monotonic(&self) -> bool {
        self.source.is_monotonic()
    }
}

impl Default for PerformanceClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for PerformanceClock {
    fn now(&self) -> Timestamp {
        self.source.now()
    }
}
