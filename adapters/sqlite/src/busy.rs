//! The bounded wait for SQLite's write lock, the wall clock in microseconds, and what a
//! failed statement means for the caller.

use std::cell::Cell;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use alkstore_kit::unavailable;
use alkstore_mem::LockError;
use rusqlite::ErrorCode;

/// The longest ttl kept: 100 years (longer ones are cut), so deadlines stay far from overflow.
pub(crate) const MAX_TTL_US: i64 = 100 * 365 * 24 * 3600 * 1_000_000;

thread_local! {
    /// Until when this thread's connection waits for SQLite's write lock (see [`busy`]).
    static BUSY_UNTIL: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The busy handler of every connection the engine opens: waits in short sleeps (0.1 ms,
/// then 1 ms) while the thread's deadline is ahead, so a lock freed by another process is
/// taken within about a millisecond, and gives up (`SQLITE_BUSY`) at the deadline.
pub(crate) fn busy(tries: i32) -> bool {
    let Some(until) = BUSY_UNTIL.with(Cell::get) else {
        return false;
    };
    let now = Instant::now();
    if now >= until {
        return false;
    }
    let pause = if tries < 20 {
        Duration::from_micros(100)
    } else {
        Duration::from_millis(1)
    };
    std::thread::sleep(pause.min(until - now));
    true
}

/// Sets the bound on waiting for the write lock for calls made on this thread from now on.
pub(crate) fn wait_until(until: Option<Instant>) {
    BUSY_UNTIL.with(|cell| cell.set(until));
}

/// The wall clock in µs since the Unix epoch (0 before it).
pub(crate) fn wall_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// A duration in µs for the tables: at least 1 µs, at most [`MAX_TTL_US`].
pub(crate) fn duration_us(d: Duration) -> i64 {
    i64::try_from(d.as_micros())
        .unwrap_or(i64::MAX)
        .clamp(1, MAX_TTL_US)
}

/// Why an operation failed.
#[derive(Debug)]
pub(crate) enum DbError {
    /// Another connection held the write lock for the whole wait.
    Busy(Duration),
    /// Anything else SQLite said.
    Sqlite(rusqlite::Error),
    /// The connection thread is gone or failed.
    Other(&'static str),
}

impl From<rusqlite::Error> for DbError {
    fn from(err: rusqlite::Error) -> Self {
        if is_busy(&err) {
            DbError::Busy(Duration::ZERO)
        } else {
            DbError::Sqlite(err)
        }
    }
}

impl DbError {
    /// As the contract's error.
    pub(crate) fn into_lock_error(self) -> LockError {
        match self {
            DbError::Busy(waited) => unavailable(format!(
                "sqlite: the database file is locked by another connection's write \
                 transaction (the call waited {waited:?} in all, nine tenths of the io_timeout \
                 or more)"
            )),
            DbError::Sqlite(err) => unavailable(format!("sqlite: {err}")),
            DbError::Other(why) => unavailable(format!("sqlite: {why}")),
        }
    }
}

/// Whether `err` is SQLite's "busy" or "locked".
pub(crate) fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_kept_in_whole_microseconds_within_bounds() {
        assert_eq!(duration_us(Duration::ZERO), 1);
        assert_eq!(duration_us(Duration::from_nanos(1)), 1);
        assert_eq!(duration_us(Duration::from_millis(1500)), 1_500_000);
        assert_eq!(duration_us(Duration::MAX), MAX_TTL_US);
    }
}
