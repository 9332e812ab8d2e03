//! What goes over the wire: microseconds on the server's clock, owners as text, the shapes
//! of the functions' replies, and `tokio-postgres` errors and settings in words.

use std::time::Duration;

use alkstore_kit::unavailable;
use alkstore_mem::{LeaseInfo, LockError, Timestamp};
use tokio_postgres::Row;

/// A `tokio-postgres` error in words, with its SQLSTATE when the server sent one, after
/// `postgres: ` (as every `Unavailable` reason of the engine begins).
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    format!("postgres: {}", detail(e))
}

/// [`describe`] without the engine's name.
pub(crate) fn detail(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!(
            "{}: {} (SQLSTATE {})",
            db.severity(),
            db.message(),
            db.code().code()
        ),
        None if e.is_closed() => "the connection was closed".into(),
        // tokio-postgres says only "error connecting to server": the cause (connection
        // refused, a name that does not resolve, a timeout) is its source.
        None => match std::error::Error::source(e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        },
    }
}

/// `LockError::Unavailable` with this reason after `postgres: `.
pub(crate) fn down(reason: impl std::fmt::Display) -> LockError {
    unavailable(format!("postgres: {reason}"))
}

/// `url` for messages: what `tokio-postgres` parsed of it, without the password.
pub(crate) fn redacted(config: &tokio_postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(h) => h.clone(),
            #[cfg(unix)]
            tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
        })
        .collect();
    let ports: Vec<String> = config.get_ports().iter().map(u16::to_string).collect();
    format!(
        "host {} port {} database {:?}",
        hosts.join(","),
        if ports.is_empty() {
            "5432".into()
        } else {
            ports.join(",")
        },
        config.get_dbname().unwrap_or("(default)")
    )
}

/// A token as the functions take it (a `bigint`).
pub(crate) fn token_param(token: u64) -> i64 {
    i64::try_from(token).unwrap_or(i64::MAX)
}

/// A server timestamp back in µs (the inverse of [`from_us`] for values it made).
pub(crate) fn to_us(at: Timestamp) -> i64 {
    i64::try_from(at.as_nanos() / 1000).unwrap_or(i64::MAX)
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
        .ok_or_else(|| down("unexpected reply from a lock function"))
}

/// Field `i` of a function's reply.
pub(crate) fn field(reply: &[i64], i: usize) -> Result<i64, LockError> {
    reply
        .get(i)
        .copied()
        .ok_or_else(|| down(format!("unexpected reply from a lock function: {reply:?}")))
}

/// A `(owner, token, deadline, now)` row of `holder` or `force_release`: the lease it names
/// (`None` for a NULL owner) and the server's now.
pub(crate) fn lease_row(name: &str, rows: &[Row]) -> Result<(Option<LeaseInfo>, i64), LockError> {
    let bad = || down("unexpected reply from a lock function");
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
