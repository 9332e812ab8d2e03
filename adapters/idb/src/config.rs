//! [`IdbConfig`]: the limits and timeouts of an [`IdbLocks`](crate::IdbLocks).

use core::time::Duration;

use alkstore_mem::Config;

/// How an [`IdbLocks`](crate::IdbLocks) uses its database.
///
/// # Example
/// ```
/// use alkstore_idb::IdbConfig;
/// use core::time::Duration;
///
/// let config = IdbConfig::new()
///     .with_io_timeout(Duration::from_millis(500))
///     .with_waiter_heartbeat(Duration::from_millis(250))
///     .with_max_name_len(64);
/// assert_eq!(config.limits().max_name_len(), 64);
/// assert_eq!(config.io_timeout(), Duration::from_millis(500));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdbConfig {
    limits: Config,
    io_timeout: Duration,
    waiter_heartbeat: Duration,
    presence: bool,
}

impl IdbConfig {
    /// The core's default limits (256-byte names and owners), a 1 s `io_timeout` and a 1 s
    /// waiter heartbeat.
    pub fn new() -> Self {
        IdbConfig {
            limits: Config::new(),
            io_timeout: Duration::from_secs(1),
            waiter_heartbeat: Duration::from_secs(1),
            presence: true,
        }
    }

    /// Names longer than `max` bytes are refused with `LockError::InvalidName`, as by the
    /// core's [`Config::with_max_name_len`]. Default: 256.
    #[must_use]
    pub fn with_max_name_len(mut self, max: usize) -> Self {
        self.limits = self.limits.with_max_name_len(max);
        self
    }

    /// Owners longer than `max` bytes are refused with `LockError::InvalidOwner`, as by the
    /// core's [`Config::with_max_owner_len`]. Default: 256.
    #[must_use]
    pub fn with_max_owner_len(mut self, max: usize) -> Self {
        self.limits = self.limits.with_max_owner_len(max);
        self
    }

    /// How long opening the database, or one transaction, may take before the call fails with
    /// `LockError::Unavailable` (a transaction that has not committed by then is aborted, so
    /// it changed nothing). A transaction takes a few milliseconds; it waits longer only
    /// behind another context's transaction, which is what this bounds. Default: 1 s.
    ///
    /// [`keep_alive`](crate::IdbLock::keep_alive) refuses leases whose ttl is below twice
    /// this (so every renewal has its whole `io_timeout` before the deadline): with the
    /// default, keep-alive needs a ttl of 2 s or more. A renewal that times out is sent again
    /// while the lease's deadline allows. The bound is measured on `performance.now()`, so a
    /// system clock step does not move it.
    #[must_use]
    pub fn with_io_timeout(mut self, timeout: Duration) -> Self {
        self.io_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How often a waiting `acquire` refreshes its ticket. A ticket not refreshed for three
    /// periods belongs to a context that went away (a closed tab, a terminated worker) and
    /// is skipped. At least 10 ms. Default: 1 s.
    ///
    /// Browsers throttle timers in hidden tabs (Chrome: to once a second, and to once a
    /// minute after five minutes hidden), so a waiter in a hidden tab may miss its
    /// heartbeats: its ticket is then skipped, and it joins the back of the queue when it
    /// runs again. Dedicated workers are not throttled that way: wait there.
    #[must_use]
    pub fn with_waiter_heartbeat(mut self, period: Duration) -> Self {
        self.waiter_heartbeat = period.max(Duration::from_millis(10));
        self
    }

    /// Whether this context holds a presence Web Lock (`alkstore:ctx:<database>:<id>`) for
    /// the database, so that other contexts take its leases and skip its tickets the moment
    /// it dies (closed, navigated away, crashed, terminated) instead of at the ttl. Default:
    /// `true`. Without it, its leases last their ttl after it dies and its tickets their
    /// heartbeats; it still tells dead contexts from live ones itself.
    ///
    /// The cost of holding it: in Chromium a page holding a Web Lock does not enter the
    /// back/forward cache (going back reloads it). A dedicated worker has no such cost.
    #[must_use]
    pub fn with_presence(mut self, presence: bool) -> Self {
        self.presence = presence;
        self
    }

    /// Whether this context holds a presence Web Lock (see
    /// [`with_presence`](Self::with_presence)).
    pub fn presence(&self) -> bool {
        self.presence
    }

    /// The name and owner limits, as the core's [`Config`] (its `max_locks` is not used).
    pub fn limits(&self) -> Config {
        self.limits
    }

    /// The timeout of opening the database and of one transaction.
    pub fn io_timeout(&self) -> Duration {
        self.io_timeout
    }

    /// The waiter heartbeat period.
    pub fn waiter_heartbeat(&self) -> Duration {
        self.waiter_heartbeat
    }
}

impl Default for IdbConfig {
    fn default() -> Self {
        Self::new()
    }
}
