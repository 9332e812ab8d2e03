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
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisConfig {
    namespace: String,
    limits: Config,
    io_timeout: Duration,
    waiter_heartbeat: Duration,
}

impl RedisConfig {
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
    /// Keep it well below the leases' `ttl - every` of
    /// [`keep_alive`](crate::RedisLock::keep_alive): a renewal sent `every` after the last
    /// one has `ttl - every` left before the lease lapses, and `keep_alive` gives up (with
    /// `Expired`) at that deadline rather than wait out a longer `io_timeout`.
    #[must_use]
    pub fn with_io_timeout(mut self, timeout: Duration) -> Self {
        self.io_timeout = timeout;
        self
    }

    /// How often a waiting `acquire` refreshes its queue entry. An entry not refreshed for
    /// three periods belongs to a crashed process and is skipped. Default: 1 s.
    #[must_use]
    pub fn with_waiter_heartbeat(mut self, period: Duration) -> Self {
        self.waiter_heartbeat = period.max(Duration::from_millis(10));
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

    /// The timeout of one call.
    pub fn io_timeout(&self) -> Duration {
        self.io_timeout
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
