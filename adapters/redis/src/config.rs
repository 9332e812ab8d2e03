//! [`RedisConfig`]: the namespace, limits and timeout of a [`RedisLocks`](crate::RedisLocks).

use core::time::Duration;

use alkstore_mem::Config;

/// How a [`RedisLocks`](crate::RedisLocks) uses its server.
///
/// # Example
/// ```
/// use alkstore_redis::RedisConfig;
/// use std::time::Duration;
///
/// let config = RedisConfig::new()
///     .with_namespace("billing")
///     .with_io_timeout(Duration::from_millis(500))
///     .with_max_name_len(64);
/// assert_eq!(config.namespace(), "billing");
/// assert_eq!(config.limits().max_name_len(), 64);
///
/// // Absurd timeouts are clamped, so that no key the engine writes lives on for ever.
/// let huge = RedisConfig::new().with_io_timeout(Duration::MAX);
/// assert_eq!(huge.io_timeout(), RedisConfig::MAX_IO_TIMEOUT);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisConfig {
    namespace: String,
    limits: Config,
    io_timeout: Duration,
    waiter_heartbeat: Duration,
}

impl RedisConfig {
    /// The shortest `io_timeout`: [`with_io_timeout`](Self::with_io_timeout) raises shorter
    /// ones (zero included) to it.
    pub const MIN_IO_TIMEOUT: Duration = Duration::from_millis(1);

    /// The longest `io_timeout`: [`with_io_timeout`](Self::with_io_timeout) cuts longer ones
    /// (up to `Duration::MAX`) to it, so that the keys kept for a retry expire within twice
    /// this.
    pub const MAX_IO_TIMEOUT: Duration = Duration::from_secs(60);

    /// The shortest waiter heartbeat.
    pub const MIN_WAITER_HEARTBEAT: Duration = Duration::from_millis(10);

    /// The longest waiter heartbeat.
    pub const MAX_WAITER_HEARTBEAT: Duration = Duration::from_secs(60);

    /// Namespace `"alk"`, the core's default limits (256-byte names and owners), a 2 s
    /// `io_timeout` and a 1 s waiter heartbeat.
    pub fn new() -> Self {
        RedisConfig {
            namespace: "alk".into(),
            limits: Config::new(),
            io_timeout: Duration::from_secs(2),
            waiter_heartbeat: Duration::from_secs(1),
        }
    }

    /// Keys are `{namespace}:…`, so that several applications share one Redis without
    /// meeting, and all keys of one namespace share a Redis Cluster hash slot. It must be
    /// non-empty and hold no `{` or `}`; [`connect_with`](crate::RedisLocks::connect_with)
    /// refuses it otherwise. Default: `"alk"`.
    #[must_use]
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
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

    /// How long any one call to Redis may take (connecting included) before it fails with
    /// `LockError::Unavailable`. Default: 2 s.
    ///
    /// Clamped to [`MIN_IO_TIMEOUT`](Self::MIN_IO_TIMEOUT) (1 ms) ..=
    /// [`MAX_IO_TIMEOUT`](Self::MAX_IO_TIMEOUT) (60 s): a zero timeout would fail every call,
    /// and the keys a call leaves behind for its retry (a release's mark,
    /// `{ns}:released:<rid>`, kept for twice the `io_timeout` and at least 1 s) must expire
    /// soon after the live state no longer needs them, so they never outlive 120 s.
    /// [`io_timeout`](Self::io_timeout) returns the clamped value.
    ///
    /// It also bounds how late a bounded wait may resolve: a
    /// [`RedisAcquire::timeout`](crate::RedisAcquire::timeout) of `wait` resolves no later
    /// than `wait + io_timeout` after its first poll, however slowly Redis answers.
    ///
    /// A renewal may take up to the `io_timeout`, so
    /// [`keep_alive`](crate::RedisLock::keep_alive) refuses a lease whose ttl is below twice
    /// it (`LockError::InvalidTtl`, `TtlProblem::TooShortToKeepAlive`): with the default 2 s,
    /// leases to keep alive need a ttl of 4 s or more. Keep it well below the ttls you use.
    #[must_use]
    pub fn with_io_timeout(mut self, timeout: Duration) -> Self {
        self.io_timeout = timeout.clamp(Self::MIN_IO_TIMEOUT, Self::MAX_IO_TIMEOUT);
        self
    }

    /// How often a waiting `acquire` refreshes its queue entry. An entry not refreshed for
    /// three periods belongs to a crashed process and is skipped (and its key expires a
    /// minute later). Default: 1 s; clamped to
    /// [`MIN_WAITER_HEARTBEAT`](Self::MIN_WAITER_HEARTBEAT) (10 ms) ..=
    /// [`MAX_WAITER_HEARTBEAT`](Self::MAX_WAITER_HEARTBEAT) (60 s), so that a crashed
    /// waiter's entry is skipped within three minutes at most.
    #[must_use]
    pub fn with_waiter_heartbeat(mut self, period: Duration) -> Self {
        self.waiter_heartbeat =
            period.clamp(Self::MIN_WAITER_HEARTBEAT, Self::MAX_WAITER_HEARTBEAT);
        self
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The name and owner limits, as the core's [`Config`] (its `max_locks` is not used).
    pub fn limits(&self) -> Config {
        self.limits
    }

    /// The timeout of one call (as clamped by [`with_io_timeout`](Self::with_io_timeout)).
    pub fn io_timeout(&self) -> Duration {
        self.io_timeout
    }

    /// How long a release's mark (`{ns}:released:<rid>`) stays, in ms: a retry of the same
    /// request runs within the `io_timeout` of the first attempt, so twice that, and at least
    /// a second, is ample; at most `2 x MAX_IO_TIMEOUT` (120 s).
    pub(crate) fn release_mark_ms(&self) -> u64 {
        let io_ms = u64::try_from(self.io_timeout.as_millis()).unwrap_or(u64::MAX);
        let max_ms = 2 * Self::MAX_IO_TIMEOUT.as_secs() * 1000;
        io_ms.saturating_mul(2).clamp(1000, max_ms)
    }

    /// The waiter heartbeat period.
    pub fn waiter_heartbeat(&self) -> Duration {
        self.waiter_heartbeat
    }
}

impl Default for RedisConfig {
    fn default() -> Self {
        Self::new()
    }
}
