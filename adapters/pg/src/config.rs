//! [`PgConfig`]: the schema, limits, timeout and pool of a [`PgLocks`](crate::PgLocks).

use core::time::Duration;

use alkstore_kit::CommonConfig;

/// How a [`PgLocks`](crate::PgLocks) uses its database.
///
/// The settings every engine shares (name and owner limits, the `io_timeout`, the waiter
/// heartbeat) come from the engine kit ([`alkstore_kit::common_config!`]), clamped alike on
/// every engine; on PostgreSQL the `io_timeout` also bounds the wait for a pooled connection
/// and connecting, and the server cancels a statement of the engine's that runs longer (its
/// `statement_timeout`). The waiter heartbeat is also how often a waiter re-checks a name
/// whose hand-off is held up by a transaction that called `fence()`.
///
/// # Example
/// ```
/// use alkstore_pg::PgConfig;
/// use std::time::Duration;
///
/// let config = PgConfig::new()
///     .with_schema("billing_locks")
///     .with_io_timeout(Duration::from_millis(500))
///     .with_pool_size(8)
///     .with_max_name_len(64);
/// assert_eq!(config.schema(), "billing_locks");
/// assert_eq!(config.pool_size(), 8);
/// assert_eq!(config.limits().max_name_len(), 64);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgConfig {
    schema: String,
    pool_size: usize,
    lock_wait: Duration,
    common: CommonConfig,
}

alkstore_kit::common_config!(PgConfig);

impl PgConfig {
    /// The largest pool: 64 connections (every one is opened at connect, and each is a
    /// server process).
    pub const MAX_POOL_SIZE: usize = 64;

    /// Schema `"alkstore"`, the core's default limits (256-byte names and owners), a 2 s
    /// `io_timeout`, a pool of 4 connections, a 1 s waiter heartbeat and a 100 ms lock wait.
    pub fn new() -> Self {
        PgConfig {
            schema: "alkstore".into(),
            pool_size: 4,
            lock_wait: Duration::from_millis(100),
            common: CommonConfig::new(),
        }
    }

    /// The schema the engine keeps its tables and functions in (created when missing, by a
    /// versioned migration). Several schemas on one database never meet. It is used as a
    /// quoted identifier, exactly as given (case-sensitive): 1 to 63 bytes of ASCII letters,
    /// digits, `_` and `-`, not beginning with `pg_`;
    /// [`connect_with`](crate::PgLocks::connect_with) refuses anything else. Default:
    /// `"alkstore"`.
    #[must_use]
    pub fn with_schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// How many connections the store's pool keeps (besides the one that listens for
    /// wake-ups): all are opened and prepared at connect, and one that breaks is opened
    /// again when needed. Calls beyond them wait for a free connection, within their
    /// `io_timeout`. Each is a server process, counted against the server's
    /// `max_connections`. Default: 4; clamped to 1 ..= [`MAX_POOL_SIZE`](Self::MAX_POOL_SIZE)
    /// (64).
    ///
    /// # Example
    /// ```
    /// use alkstore_pg::PgConfig;
    ///
    /// assert_eq!(PgConfig::new().with_pool_size(0).pool_size(), 1);
    /// assert_eq!(PgConfig::new().with_pool_size(usize::MAX).pool_size(), PgConfig::MAX_POOL_SIZE);
    /// ```
    #[must_use]
    pub fn with_pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.clamp(1, Self::MAX_POOL_SIZE);
        self
    }

    /// How long an operation waits for a lease row that another transaction has locked
    /// before it counts the name as busy: a transaction that called `fence()` holds the row
    /// until it ends, and a `try_lock` meanwhile answers `Ok(None)` after this wait (a fence
    /// that ends within it lets the `try_lock` through). A `try_lock` never waits on the row
    /// on the server: it is refused there at once and tried again after pauses (2 ms,
    /// doubling), its pooled connection free for other calls meanwhile. Other operations wait
    /// on the server at most this long (the connection's `lock_timeout`) for a row another
    /// operation holds (for well under a millisecond).
    /// Waiting `acquire` steps, renewals and releases are not held up by a fence at all,
    /// and `force_release` refuses one at once. The engine's own operations hold a row for
    /// well under a millisecond. Default: 100 ms; kept below half the `io_timeout`.
    #[must_use]
    pub fn with_lock_wait(mut self, wait: Duration) -> Self {
        self.lock_wait = wait.max(Duration::from_millis(1));
        self
    }

    /// The schema.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The most connections the pool opens.
    pub fn pool_size(&self) -> usize {
        self.pool_size
    }

    /// How long an operation waits for a row locked by another transaction: the configured
    /// lock wait, capped at half the `io_timeout`.
    pub fn lock_wait(&self) -> Duration {
        self.lock_wait
            .min(self.io_timeout() / 2)
            .max(Duration::from_millis(1))
    }

    /// Checks the schema name as [`PgLocks::connect_with`](crate::PgLocks::connect_with)
    /// does before connecting: `Err` with the reason when it is not one this engine uses
    /// (so that a tool can tell a bad argument from a server it cannot reach).
    ///
    /// # Example
    /// ```
    /// use alkstore_pg::PgConfig;
    ///
    /// assert!(PgConfig::new().with_schema("billing_locks").check_schema().is_ok());
    /// let refused = PgConfig::new().with_schema("pg_locks").check_schema().unwrap_err();
    /// assert!(refused.contains("reserved"), "{refused}");
    /// ```
    pub fn check_schema(&self) -> Result<(), String> {
        let s = self.schema.as_str();
        let why = if s.is_empty() {
            Some("it is empty")
        } else if s.len() > 63 {
            Some("it is longer than 63 bytes (PostgreSQL's identifier limit)")
        } else if !s
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            Some("it may hold only ASCII letters, digits, '_' and '-'")
        } else if s.len() >= 3 && s[..3].eq_ignore_ascii_case("pg_") {
            Some("names beginning with \"pg_\" are reserved by PostgreSQL")
        } else {
            None
        };
        match why {
            Some(why) => Err(format!("invalid PgConfig: schema {s:?}: {why}")),
            None => Ok(()),
        }
    }
}

impl Default for PgConfig {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_are_checked() {
        for ok in ["alkstore", "Billing-Locks_2", "a", &"x".repeat(63)] {
            assert!(
                PgConfig::new().with_schema(ok).check_schema().is_ok(),
                "{ok}"
            );
        }
        for bad in [
            "",
            "a\"b",
            "a'b",
            "a$b",
            "a;drop",
            "a b",
            "pg_x",
            "PG_x",
            "é",
            &"x".repeat(64),
        ] {
            let err = PgConfig::new().with_schema(bad).check_schema().unwrap_err();
            assert!(err.contains("invalid PgConfig: schema"), "{err}");
        }
    }

    #[test]
    fn absurd_durations_are_clamped() {
        let c = PgConfig::new()
            .with_io_timeout(Duration::MAX)
            .with_waiter_heartbeat(Duration::MAX);
        assert_eq!(c.io_timeout(), PgConfig::MAX_IO_TIMEOUT);
        assert_eq!(c.waiter_heartbeat(), PgConfig::MAX_WAITER_HEARTBEAT);
        let c = PgConfig::new()
            .with_io_timeout(Duration::ZERO)
            .with_waiter_heartbeat(Duration::ZERO);
        assert_eq!(c.io_timeout(), PgConfig::MIN_IO_TIMEOUT);
        assert_eq!(c.waiter_heartbeat(), PgConfig::MIN_WAITER_HEARTBEAT);
        assert_eq!(c.lock_wait(), Duration::from_millis(1));
    }

    #[test]
    fn lock_wait_stays_below_half_the_io_timeout() {
        let c = PgConfig::new().with_io_timeout(Duration::from_millis(100));
        assert_eq!(c.lock_wait(), Duration::from_millis(50));
        assert_eq!(PgConfig::new().lock_wait(), Duration::from_millis(100));
    }
}
