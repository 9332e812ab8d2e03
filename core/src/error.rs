//! [`LockError`]: every way a call can be refused.
//!
//! A busy lock is not an error (`try_lock` answers `Ok(None)`), and neither is a lease that
//! lapsed (it is simply free again). Errors are for bad input, a renew that came too late
//! and a full table. A refused call changes nothing.

use alloc::string::String;
use core::fmt;
use core::time::Duration;

use crate::readable::{Quoted, Readable};
use crate::time::Timestamp;

/// Why a call was refused. Messages name the offending value or limit.
///
/// Fields hold plain data: the name or owner as given (empty when it was refused for being
/// too long: [`InputProblem::TooLong`] then holds its length), the limit, the token.
/// `Display` quotes, escapes and shortens the value, so that a megabyte of bad input does not
/// become a megabyte of log line.
///
/// # Example
/// ```
/// use alkstore_mem::{LockError, LockRegistry, ManualClock};
/// use core::time::Duration;
///
/// let registry = LockRegistry::new(ManualClock::new());
/// let err = registry.try_lock("a\nb", "worker", Duration::from_secs(1)).unwrap_err();
/// assert!(matches!(&err, LockError::InvalidName { name, .. } if name == "a\nb"));
/// assert_eq!(
///     err.to_string(),
///     "invalid lock name \"a\\nb\": it contains the control character U+000A at byte 1"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum LockError {
    /// The name is empty, longer than [`Config::max_name_len`](crate::Config::max_name_len)
    /// or contains a control character.
    #[error("invalid lock name{}: {problem}", Shown(.name, .problem))]
    InvalidName {
        /// The name as given; empty when it is too long (`problem` holds its length).
        name: String,
        /// What is wrong with it.
        problem: InputProblem,
    },
    /// The name begins with [`RESERVED_PREFIX`](crate::RESERVED_PREFIX) (ASCII case-insensitive).
    #[error(
        "lock name {} is reserved: names beginning with \"alk:\" (in any case) are kept for alkstore itself",
        Quoted(.name)
    )]
    ReservedName {
        /// The name as given.
        name: String,
    },
    /// The owner is empty or longer than [`Config::max_owner_len`](crate::Config::max_owner_len).
    #[error("invalid owner{}: {problem}", Shown(.owner, .problem))]
    InvalidOwner {
        /// The owner as given; empty when it is too long (`problem` holds its length).
        owner: String,
        /// What is wrong with it.
        problem: InputProblem,
    },
    /// The lease duration cannot be used: it is zero (a lease that is lapsed the moment it is
    /// granted), or, for `keep_alive` on a remote engine, too short for a renewal's round trip.
    #[error("invalid lease ttl {}: {problem}", Readable(*.ttl))]
    InvalidTtl {
        /// The refused duration.
        ttl: Duration,
        /// What is wrong with it.
        problem: TtlProblem,
    },
    /// The lease is gone: it lapsed at its deadline, or was released or force-released before
    /// it. A `renew` refused this way leaves it gone; `keep_alive`, `lapsed` and `with_lock`
    /// end with this error when they find the lease lost.
    ///
    /// `Display` says how long ago it lapsed (or how early it ended) and the ttl it had, in
    /// readable units: `lease on lock "job" (fencing token 3) lapsed 401ms ago, at the end of
    /// its 100ms ttl`.
    #[error("lease on lock {} {}", Quoted(.name), Ended { token: *.token, ttl: *.ttl, deadline: *.deadline, now: *.now })]
    Expired {
        /// The lock's name.
        name: String,
        /// The fencing token of the lost lease.
        token: u64,
        /// The ttl of the lease's last grant or renew; zero where the reporter does not know
        /// it (a bare [`LockTable`](crate::LockTable), which keeps no ttls).
        ttl: Duration,
        /// The lease's deadline as its handle last knew it, on the engine's clock.
        deadline: Timestamp,
        /// When the loss was found, on the engine's clock (a remote engine that could not be
        /// reached: its estimate of the server's clock).
        now: Timestamp,
    },
    /// The table already holds [`Config::max_locks`](crate::Config::max_locks) live leases and
    /// the name is not among them.
    #[error(
        "lock table is full: {max} live leases (Config::max_locks) leave no room for lock {}",
        Quoted(.name)
    )]
    CapacityExceeded {
        /// The refused name.
        name: String,
        /// The configured limit.
        max: usize,
    },
    /// The engine could not be reached or answered badly (a remote engine: connection
    /// refused, a timeout, a script error). Never produced by the in-memory engine. Nothing
    /// is known to be held: a lease whose renew failed this way lapses at its deadline.
    #[error("lock engine unavailable: {reason}")]
    Unavailable {
        /// What went wrong, in words.
        reason: String,
    },
}

/// What is wrong with a lease duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum TtlProblem {
    /// It is zero.
    Zero,
    /// `keep_alive` on a remote engine: a renewal may take up to the engine's `io_timeout`,
    /// and a ttl under twice that cannot be renewed with room to spare, so it is refused
    /// rather than lost to one slow answer.
    TooShortToKeepAlive {
        /// The engine's bound on one round trip.
        io_timeout: Duration,
    },
}

impl fmt::Display for TtlProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TtlProblem::Zero => f.write_str("a lease must last longer than zero"),
            TtlProblem::TooShortToKeepAlive { io_timeout } => write!(
                f,
                "keep_alive needs a ttl of at least twice the io_timeout ({}), so that a \
                 renewal can take its whole io_timeout before the deadline; use a longer ttl \
                 or a shorter io_timeout",
                Readable(io_timeout)
            ),
        }
    }
}

/// What is wrong with a name or an owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum InputProblem {
    /// It is the empty string.
    Empty,
    /// It is longer than the configured limit.
    TooLong {
        /// Its length in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// It contains a control character (names only).
    ControlCharacter {
        /// Byte offset of the character.
        index: usize,
        /// The character.
        ch: char,
    },
}

impl fmt::Display for InputProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            InputProblem::Empty => f.write_str("it is empty"),
            InputProblem::TooLong { len, max } => {
                let unit = if len == 1 { "byte" } else { "bytes" };
                write!(f, "it is {len} {unit} long, over the limit of {max}")
            }
            InputProblem::ControlCharacter { index, ch } => write!(
                f,
                "it contains the control character U+{:04X} at byte {index}",
                u32::from(ch)
            ),
        }
    }
}

/// A refused name or owner after a space, quoted; nothing when it was too long to keep (the
/// problem then gives its length).
struct Shown<'a>(&'a str, &'a InputProblem);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0, self.1) {
            ("", InputProblem::TooLong { .. }) => Ok(()),
            (value, _) => write!(f, " {}", Quoted(value)),
        }
    }
}

/// How a lost lease ended, in words an operator can act on: how long ago it lapsed and the
/// ttl it had, or how long before its deadline it was released.
struct Ended {
    token: u64,
    ttl: Duration,
    deadline: Timestamp,
    now: Timestamp,
}

impl fmt::Display for Ended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Ended {
            token,
            ttl,
            deadline,
            now,
        } = *self;
        if now >= deadline {
            write!(f, "(fencing token {token}) lapsed ")?;
            match now.saturating_duration_since(deadline) {
                Duration::ZERO => f.write_str("just now")?,
                ago => write!(f, "{} ago", Readable(ago))?,
            }
            if !ttl.is_zero() {
                write!(f, ", at the end of its {} ttl", Readable(ttl))?;
            }
            Ok(())
        } else {
            write!(f, "(fencing token {token}")?;
            if !ttl.is_zero() {
                write!(f, ", ttl {}", Readable(ttl))?;
            }
            f.write_str(") was released or force-released")?;
            if deadline == Timestamp::MAX {
                f.write_str(" (it had no deadline)")
            } else {
                let early = deadline.saturating_duration_since(now);
                write!(f, " {} before its deadline", Readable(early))
            }
        }
    }
}

/// The value as an error keeps it: as given, or empty when it is too long to keep.
pub(crate) fn kept(value: &str, problem: &InputProblem) -> String {
    match problem {
        InputProblem::TooLong { .. } => String::new(),
        _ => value.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn fields_hold_plain_data_and_display_quotes_it() {
        let e = LockError::InvalidOwner {
            owner: String::new(),
            problem: InputProblem::TooLong { len: 300, max: 256 },
        };
        assert_eq!(
            e.to_string(),
            "invalid owner: it is 300 bytes long, over the limit of 256"
        );
        let e = LockError::InvalidName {
            name: "a\nb".into(),
            problem: InputProblem::ControlCharacter { index: 1, ch: '\n' },
        };
        assert_eq!(
            e.to_string(),
            "invalid lock name \"a\\nb\": it contains the control character U+000A at byte 1"
        );
        let e = LockError::Expired {
            name: "short".into(),
            token: 7,
            ttl: Duration::from_millis(100),
            deadline: Timestamp::from_nanos(100_029_973),
            now: Timestamp::from_nanos(501_559_942),
        };
        assert_eq!(
            e.to_string(),
            "lease on lock \"short\" (fencing token 7) lapsed 401ms ago, at the end of its 100ms ttl"
        );
        let e = LockError::Expired {
            name: "job".into(),
            token: 3,
            ttl: Duration::from_secs(30),
            deadline: Timestamp::from_millis(30_000),
            now: Timestamp::from_millis(27_900),
        };
        assert_eq!(
            e.to_string(),
            "lease on lock \"job\" (fencing token 3, ttl 30s) was released or force-released 2.1s before its deadline"
        );
        let e = LockError::Expired {
            name: "job".into(),
            token: 3,
            ttl: Duration::ZERO,
            deadline: Timestamp::from_millis(5),
            now: Timestamp::from_millis(5),
        };
        assert_eq!(
            e.to_string(),
            "lease on lock \"job\" (fencing token 3) lapsed just now"
        );
        let e = LockError::InvalidTtl {
            ttl: Duration::from_millis(300),
            problem: TtlProblem::TooShortToKeepAlive {
                io_timeout: Duration::from_secs(2),
            },
        };
        assert!(
            e.to_string()
                .starts_with("invalid lease ttl 300ms: keep_alive needs a ttl of at least twice the io_timeout (2s)"),
            "{e}"
        );
        let e = LockError::Unavailable {
            reason: "connection refused".into(),
        };
        assert_eq!(e.to_string(), "lock engine unavailable: connection refused");
    }
}
