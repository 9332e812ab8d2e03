//! [`RedisConfig`]: the namespace of a [`RedisLocks`](crate::RedisLocks), with the limits and
//! timeouts every engine shares (from the kit's [`CommonConfig`]).

use std::time::Duration;

use alkstore_kit::CommonConfig;

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
    common: CommonConfig,
    /// PEM of the CA(s) that `rediss://` server certificates must chain to, instead of the
    /// system's roots.
    tls_root_ca: Option<Vec<u8>>,
    /// Replicas that must acknowledge a grant or renewal, and for how long to wait for them.
    replica_ack: Option<(u32, Duration)>,
}

alkstore_kit::common_config!(RedisConfig);

impl RedisConfig {
    /// Namespace `"alk"`, the core's default limits (256-byte names and owners), a 2 s
    /// `io_timeout` and a 1 s waiter heartbeat.
    pub fn new() -> Self {
        RedisConfig {
            namespace: "alk".into(),
            common: CommonConfig::new(),
            tls_root_ca: None,
            replica_ack: None,
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

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Trust only the CA certificate(s) in `pem` (PEM text, one or more certificates) for a
    /// `rediss://` server, instead of the system's roots: for a Redis whose certificate is
    /// signed by a private CA. The server's certificate must still name the URL's host.
    /// [`connect_with`](crate::RedisLocks::connect_with) answers
    /// [`LockError::Unavailable`](alkstore_mem::LockError::Unavailable) when `pem` holds no
    /// certificate, when the URL is not `rediss://`, when this build has no TLS (feature
    /// `tls`, on by default), and when the server's certificate does not chain to it.
    #[must_use]
    pub fn with_tls_root_ca(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.tls_root_ca = Some(pem.into());
        self
    }

    /// The PEM set by [`with_tls_root_ca`](Self::with_tls_root_ca), if any.
    pub fn tls_root_ca(&self) -> Option<&[u8]> {
        self.tls_root_ca.as_deref()
    }

    /// Waits for `replicas` replicas to acknowledge every grant (of a `try_lock`, of a step
    /// of an `acquire`, a hand-off included) and every renewal before the caller is told it
    /// holds the lock: each of these scripts is followed by `WAIT replicas timeout` in one
    /// pipeline on the same connection. When fewer acknowledge within `timeout`, the call
    /// answers [`LockError::Unavailable`](alkstore_mem::LockError::Unavailable): a grant is
    /// then withdrawn (the kit withdraws a request whose call failed; the lease ends on the
    /// master at once), a renewal is reported as failed (the lease keeps the deadline it had
    /// before as far as the caller knows; `keep_alive` tries again). Releases and withdrawals
    /// are not waited for: one lost in a failover leaves a lease that lapses at its deadline,
    /// never two holders. `timeout` is clamped to 1 ms..=3/4 of the `io_timeout` (the whole call
    /// is bound by the `io_timeout`; a `WAIT` as long would be told as a timeout, not a refusal). `replicas == 0` turns it off (the default).
    #[must_use]
    pub fn with_replica_ack(mut self, replicas: u32, timeout: Duration) -> Self {
        self.replica_ack = (replicas > 0).then_some((replicas, timeout));
        self
    }

    /// The replica acknowledgement set by [`with_replica_ack`](Self::with_replica_ack):
    /// `(replicas, timeout)` as given, `None` when off.
    pub fn replica_ack(&self) -> Option<(u32, Duration)> {
        self.replica_ack
    }

    /// How long a release's mark (`{ns}:released:<rid>`) stays, in ms: a retry of the same
    /// request runs within the `io_timeout` of the first attempt, so twice that, and at least
    /// a second, is ample; at most `2 x MAX_IO_TIMEOUT` (120 s), which is why the
    /// `io_timeout` is clamped.
    pub(crate) fn release_mark_ms(&self) -> u64 {
        let io_ms = u64::try_from(self.io_timeout().as_millis()).unwrap_or(u64::MAX);
        let max_ms = 2 * Self::MAX_IO_TIMEOUT.as_secs() * 1000;
        io_ms.saturating_mul(2).clamp(1000, max_ms)
    }
}

impl Default for RedisConfig {
    fn default() -> Self {
        Self::new()
    }
}
