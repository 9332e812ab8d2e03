//! [`CommonConfig`]: the settings every engine with a server shares, their clamps, and the
//! macro that gives an engine's config type the same builder methods.

use core::time::Duration;

use alkstore_mem::Config;

/// The settings every engine shares: name and owner limits, the `io_timeout` and the waiter
/// heartbeat, with their clamps written once. An engine's config holds one in a field named
/// `common` and gets the builder methods from [`common_config!`](crate::common_config).
///
/// # Example
/// ```
/// use alkstore_kit::CommonConfig;
/// use std::time::Duration;
///
/// let common = CommonConfig::new().with_io_timeout(Duration::MAX);
/// assert_eq!(common.io_timeout(), CommonConfig::MAX_IO_TIMEOUT);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommonConfig {
    limits: Config,
    io_timeout: Duration,
    waiter_heartbeat: Duration,
}

impl CommonConfig {
    /// The shortest `io_timeout`: shorter ones (zero included) are raised to it.
    pub const MIN_IO_TIMEOUT: Duration = Duration::from_millis(1);
    /// The longest `io_timeout`: longer ones (up to `Duration::MAX`) are cut to it, so that
    /// what an engine keeps for a retry expires within twice this.
    pub const MAX_IO_TIMEOUT: Duration = Duration::from_secs(60);
    /// The shortest waiter heartbeat.
    pub const MIN_WAITER_HEARTBEAT: Duration = Duration::from_millis(10);
    /// The longest waiter heartbeat: a crashed waiter is skipped within three of these.
    pub const MAX_WAITER_HEARTBEAT: Duration = Duration::from_secs(60);

    /// The core's default limits (256-byte names and owners), a 2 s `io_timeout` and a 1 s
    /// waiter heartbeat.
    pub const fn new() -> Self {
        CommonConfig {
            limits: Config::new(),
            io_timeout: Duration::from_secs(2),
            waiter_heartbeat: Duration::from_secs(1),
        }
    }

    /// Names longer than `max` bytes are refused with `LockError::InvalidName`.
    #[must_use]
    pub fn with_max_name_len(mut self, max: usize) -> Self {
        self.limits = self.limits.with_max_name_len(max);
        self
    }

    /// Owners longer than `max` bytes are refused with `LockError::InvalidOwner`.
    #[must_use]
    pub fn with_max_owner_len(mut self, max: usize) -> Self {
        self.limits = self.limits.with_max_owner_len(max);
        self
    }

    /// The bound on one operation, clamped to
    /// [`MIN_IO_TIMEOUT`](Self::MIN_IO_TIMEOUT)..=[`MAX_IO_TIMEOUT`](Self::MAX_IO_TIMEOUT).
    #[must_use]
    pub fn with_io_timeout(mut self, timeout: Duration) -> Self {
        self.io_timeout = timeout.clamp(Self::MIN_IO_TIMEOUT, Self::MAX_IO_TIMEOUT);
        self
    }

    /// The waiter heartbeat, clamped to
    /// [`MIN_WAITER_HEARTBEAT`](Self::MIN_WAITER_HEARTBEAT)..=[`MAX_WAITER_HEARTBEAT`](Self::MAX_WAITER_HEARTBEAT).
    #[must_use]
    pub fn with_waiter_heartbeat(mut self, period: Duration) -> Self {
        self.waiter_heartbeat =
            period.clamp(Self::MIN_WAITER_HEARTBEAT, Self::MAX_WAITER_HEARTBEAT);
        self
    }

    /// The name and owner limits.
    pub const fn limits(&self) -> Config {
        self.limits
    }

    /// The bound on one operation.
    pub const fn io_timeout(&self) -> Duration {
        self.io_timeout
    }

    /// The waiter heartbeat.
    pub const fn waiter_heartbeat(&self) -> Duration {
        self.waiter_heartbeat
    }
}

impl Default for CommonConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// Gives an engine's config type (a struct with a field `common: CommonConfig` and a
/// `Default` impl) the shared builder methods, getters and clamps, and implements
/// [`Settings`](crate::Settings) for it. Written once here, so that every engine documents
/// and clamps them alike.
///
/// # Example
/// ```
/// use alkstore_kit::CommonConfig;
/// use std::time::Duration;
///
/// /// A toy engine's config.
/// #[derive(Clone, Debug, Default, PartialEq, Eq)]
/// pub struct ToyConfig {
///     common: CommonConfig,
/// }
/// alkstore_kit::common_config!(ToyConfig);
///
/// let config = ToyConfig::default().with_io_timeout(Duration::ZERO).with_max_name_len(64);
/// assert_eq!(config.io_timeout(), ToyConfig::MIN_IO_TIMEOUT);
/// assert_eq!(config.limits().max_name_len(), 64);
/// ```
#[macro_export]
macro_rules! common_config {
    ($config:ty) => {
        impl $config {
            /// The shortest `io_timeout`: [`with_io_timeout`](Self::with_io_timeout) raises
            /// shorter ones (zero included) to it.
            pub const MIN_IO_TIMEOUT: ::core::time::Duration = $crate::CommonConfig::MIN_IO_TIMEOUT;
            /// The longest `io_timeout`: [`with_io_timeout`](Self::with_io_timeout) cuts
            /// longer ones (up to `Duration::MAX`) to it, so that what the engine keeps for a
            /// retry expires within twice this.
            pub const MAX_IO_TIMEOUT: ::core::time::Duration = $crate::CommonConfig::MAX_IO_TIMEOUT;
            /// The shortest waiter heartbeat.
            pub const MIN_WAITER_HEARTBEAT: ::core::time::Duration =
                $crate::CommonConfig::MIN_WAITER_HEARTBEAT;
            /// The longest waiter heartbeat.
            pub const MAX_WAITER_HEARTBEAT: ::core::time::Duration =
                $crate::CommonConfig::MAX_WAITER_HEARTBEAT;

            /// Names longer than `max` bytes are refused with `LockError::InvalidName`, as by
            /// the core's `Config::with_max_name_len`. Default: 256.
            #[must_use]
            pub fn with_max_name_len(mut self, max: usize) -> Self {
                self.common = self.common.with_max_name_len(max);
                self
            }

            /// Owners longer than `max` bytes are refused with `LockError::InvalidOwner`, as
            /// by the core's `Config::with_max_owner_len`. Default: 256.
            #[must_use]
            pub fn with_max_owner_len(mut self, max: usize) -> Self {
                self.common = self.common.with_max_owner_len(max);
                self
            }

            /// How long any one call may take (connecting included) before it fails with
            /// `LockError::Unavailable`. Default: 2 s; clamped to
            /// [`MIN_IO_TIMEOUT`](Self::MIN_IO_TIMEOUT) (1 ms) ..=
            /// [`MAX_IO_TIMEOUT`](Self::MAX_IO_TIMEOUT) (60 s);
            /// [`io_timeout`](Self::io_timeout) returns the clamped value.
            ///
            /// It also bounds how late a bounded wait may resolve: `acquire(..).timeout(wait)`
            /// resolves no later than `wait + io_timeout` after its first poll, however slowly
            /// the server answers. A renewal may take up to the `io_timeout`, so `keep_alive`
            /// refuses a lease whose ttl is below twice it (`LockError::InvalidTtl`,
            /// `TtlProblem::TooShortToKeepAlive`): with the default 2 s, leases to keep alive
            /// need a ttl of 4 s or more. Keep it well below the ttls you use.
            #[must_use]
            pub fn with_io_timeout(mut self, timeout: ::core::time::Duration) -> Self {
                self.common = self.common.with_io_timeout(timeout);
                self
            }

            /// How often a waiting `acquire` refreshes its queue entry. An entry not refreshed
            /// for three periods belongs to a crashed process and is skipped. Default: 1 s;
            /// clamped to [`MIN_WAITER_HEARTBEAT`](Self::MIN_WAITER_HEARTBEAT) (10 ms) ..=
            /// [`MAX_WAITER_HEARTBEAT`](Self::MAX_WAITER_HEARTBEAT) (60 s), so that a crashed
            /// waiter is skipped within three minutes at most.
            #[must_use]
            pub fn with_waiter_heartbeat(mut self, period: ::core::time::Duration) -> Self {
                self.common = self.common.with_waiter_heartbeat(period);
                self
            }

            /// The name and owner limits, as the core's `Config` (its `max_locks` is not used).
            pub fn limits(&self) -> $crate::alkstore_mem::Config {
                self.common.limits()
            }

            /// The timeout of one call (as clamped by
            /// [`with_io_timeout`](Self::with_io_timeout)).
            pub fn io_timeout(&self) -> ::core::time::Duration {
                self.common.io_timeout()
            }

            /// The waiter heartbeat period.
            pub fn waiter_heartbeat(&self) -> ::core::time::Duration {
                self.common.waiter_heartbeat()
            }
        }

        impl $crate::Settings for $config {
            fn io_timeout(&self) -> ::core::time::Duration {
                self.common.io_timeout()
            }
            fn waiter_heartbeat(&self) -> ::core::time::Duration {
                self.common.waiter_heartbeat()
            }
            fn limits(&self) -> $crate::alkstore_mem::Config {
                self.common.limits()
            }
        }
    };
}
