//! What goes over the wire: microseconds on the server's clock, owners as text, the shapes
//! of the functions' replies, and the local estimate of the server's clock.

use std::time::{Duration, Instant};

use alkstore_mem::{LeaseInfo, LockError, Timestamp};
use tokio_postgres::Row;

use crate::pool::unavailable;

/// A reply's reading of the server's lease clock, with the local instant its request was
/// SENT at, so that a handle can estimate the server's time without asking. The estimate
/// `server + (now - sent)` is never behind the server's real time: it errs early, never late.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Anchor {
    pub(crate) server: Timestamp,
    pub(crate) local: Instant,
}

impl Anchor {
    /// The server's reading `server_us` of a request sent at `sent`.
    pub(crate) fn new(server_us: i64, sent: Instant) -> Self {
        Anchor {
            server: from_us(server_us),
            local: sent,
        }
    }

    /// The server's time now, as estimated from this reading (never behind it).
    pub(crate) fn estimate(&self) -> Timestamp {
        self.server.saturating_add(self.local.elapsed())
    }

    /// How long until `at` on the server's clock, as estimated from this reading.
    pub(crate) fn until(&self, at: Timestamp) -> Duration {
        at.saturating_duration_since(self.estimate())
    }
}

/// The longest lease, in µs: 100 years (longer ttls, up to `Duration::MAX`, are cut to it),
/// which keeps every deadline well inside a bigint.
const MAX_TTL_US: u64 = 100 * 365 * 24 * 3600 * 1_000_000;

/// `d` in whole microseconds, rounded up (a 1 ns ttl is 1 µs, never 0) and capped.
pub(crate) fn micros(d: Duration) -> i64 {
    let us = d.as_nanos().div_ceil(1000);
    let us = u64::try_from(us).unwrap_or(u64::MAX).min(MAX_TTL_US);
    i64::try_from(us).unwrap_or(i64::MAX)
}

/// A server reading in µs as a [`Timestamp`] (ns since the Unix epoch, on the server's clock).
pub(crate) fn from_us(us: i64) -> Timestamp {
    Timestamp::from_nanos(u64::try_from(us).unwrap_or(0).saturating_mul(1000))
}

/// An owner as stored: text cannot hold NUL, which owners may contain, so `\` is written
/// `\\` and NUL `\0`.
pub(crate) fn owner_to_sql(owner: &str) -> String {
    if !owner.contains(['\\', '\0']) {
        return owner.into();
    }
    owner.replace('\\', "\\\\").replace('\0', "\\0")
}

/// An owner as read back (the inverse of [`owner_to_sql`]).
pub(crate) fn owner_from_sql(stored: &str) -> String {
    if !stored.contains('\\') {
        return stored.into();
    }
    let mut out = String::with_capacity(stored.len());
    let mut chars = stored.chars();
    while let Some(c) = chars.next() {
        match (c, chars.clone().next()) {
            ('\\', Some('0')) => {
                out.push('\0');
                chars.next();
            }
            ('\\', Some('\\')) => {
                out.push('\\');
                chars.next();
            }
            (c, _) => out.push(c),
        }
    }
    out
}

/// The single bigint[] a function returned.
pub(crate) fn numbers(rows: &[Row]) -> Result<Vec<i64>, LockError> {
    rows.first()
        .and_then(|row| row.try_get::<_, Vec<i64>>(0).ok())
        .ok_or_else(|| unavailable("unexpected reply from a lock function"))
}

/// Field `i` of a function's reply.
pub(crate) fn field(reply: &[i64], i: usize) -> Result<i64, LockError> {
    reply
        .get(i)
        .copied()
        .ok_or_else(|| unavailable(format!("unexpected reply from a lock function: {reply:?}")))
}

/// A `(owner, token, deadline, now)` row of `holder` or `force_release`: the lease it names
/// (`None` for a NULL owner) and the server's now.
pub(crate) fn lease_row(name: &str, rows: &[Row]) -> Result<(Option<LeaseInfo>, i64), LockError> {
    let bad = || unavailable("unexpected reply from a lock function");
    let row = rows.first().ok_or_else(bad)?;
    let owner: Option<String> = row.try_get(0).map_err(|_| bad())?;
    let token: Option<i64> = row.try_get(1).map_err(|_| bad())?;
    let deadline: Option<i64> = row.try_get(2).map_err(|_| bad())?;
    let now: i64 = row.try_get(3).map_err(|_| bad())?;
    let info = match (owner, token, deadline) {
        (Some(owner), Some(token), Some(deadline)) => Some(LeaseInfo::new(
            name,
            &owner_from_sql(&owner),
            u64::try_from(token).unwrap_or(0),
            from_us(deadline),
        )),
        _ => None,
    };
    Ok((info, now))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_round_trip_through_text() {
        for owner in ["w", "a\\b", "a\0b", "\\0", "\0\\\0", "ü\\\\0x", "end\\"] {
            let stored = owner_to_sql(owner);
            assert!(!stored.contains('\0'));
            assert_eq!(owner_from_sql(&stored), owner, "{stored:?}");
        }
    }

    #[test]
    fn micros_round_up_and_cap() {
        assert_eq!(micros(Duration::from_nanos(1)), 1);
        assert_eq!(micros(Duration::from_millis(3)), 3000);
        assert_eq!(micros(Duration::MAX), MAX_TTL_US as i64);
    }
}
