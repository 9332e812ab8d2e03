//! [`SqliteConfig`]: the namespace, the synchronous setting, and the settings every engine
//! shares (from the kit).

use alkstore_kit::CommonConfig;

/// How a commit reaches the disk: SQLite's `PRAGMA synchronous` in WAL mode.
///
/// Both survive a crash of the process (`kill -9` included) with nothing lost: a committed
/// grant, token or renewal is in the WAL file. They differ on a power loss or an OS crash.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Synchronous {
    /// `NORMAL` (the default): no `fsync` at each commit, only at checkpoints. A power loss
    /// may lose the last commits: a lease granted or renewed just before it may be gone
    /// after the reboot, and its token may be handed out again only if the wall clock then
    /// reads earlier than when it was first granted (tokens are `max(last + 1, now in µs)`,
    /// so they keep growing with the clock).
    #[default]
    Normal,
    /// `FULL`: every commit is flushed before it is answered. Nothing answered is lost on a
    /// power loss; each operation costs one `fsync`.
    Full,
}

/// The configuration of a [`SqliteLocks`](crate::SqliteLocks) store.
///
/// # Example
/// ```
/// use alkstore_sqlite::{SqliteConfig, Synchronous};
/// use std::time::Duration;
///
/// let config = SqliteConfig::new()
///     .with_namespace("jobs")
///     .with_io_timeout(Duration::from_millis(500))
///     .with_synchronous(Synchronous::Full)
///     .with_max_name_len(128);
/// assert_eq!(config.namespace(), "jobs");
/// assert_eq!(config.io_timeout(), Duration::from_millis(500));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteConfig {
    common: CommonConfig,
    namespace: String,
    synchronous: Synchronous,
}

alkstore_kit::common_config!(SqliteConfig);

impl SqliteConfig {
    /// The namespace used unless [`with_namespace`](Self::with_namespace) names another.
    pub const DEFAULT_NAMESPACE: &'static str = "alkstore";

    /// The defaults: namespace `alkstore`, `io_timeout` 2 s (the bound on waiting for
    /// SQLite's write lock, and on any one call), waiter heartbeat 1 s, 256-byte names and
    /// owners, [`Synchronous::Normal`].
    pub fn new() -> Self {
        SqliteConfig {
            common: CommonConfig::new(),
            namespace: Self::DEFAULT_NAMESPACE.to_owned(),
            synchronous: Synchronous::Normal,
        }
    }

    /// Several lock spaces in one file: every table of the engine is named
    /// `<namespace>_<table>` (`alkstore_leases`, ...), and stores of different namespaces
    /// never meet. A namespace is an ASCII letter followed by up to 39 ASCII letters, digits
    /// or underscores; another is refused at open with `LockError::Unavailable`.
    #[must_use]
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// How commits reach the disk (see [`Synchronous`]). Default: [`Synchronous::Normal`].
    #[must_use]
    pub fn with_synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The synchronous setting.
    pub fn synchronous(&self) -> Synchronous {
        self.synchronous
    }
}

impl Default for SqliteConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether `namespace` is one the engine accepts (see [`SqliteConfig::with_namespace`]).
pub(crate) fn valid_namespace(namespace: &str) -> bool {
    let mut chars = namespace.chars();
    namespace.len() <= 40
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
