//! [`LockError`]: every way a call can be refused.
//!
//! A busy lock is not an error (`try_lock` answers `Ok(None)`), and neither is a lease that
//! lapsed (it is simply free again). Errors are for bad input, a renew that came too late
//! and a full table. A refused call changes nothing.

use alloc::string::String;
use core::fmt::{self, Write};
use core::time::Duration;

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
    /// The lease duration is zero: a lease that is lapsed the moment it is granted is refused.
    #[error("invalid lease ttl {ttl:?}: a lease must last longer than zero")]
    InvalidTtl {
        /// The refused duration.
        ttl: Duration,
    },
    /// `renew` came at or after the lease's deadline (or the lease was released or
    /// force-released); the lease stays lapsed.
    #[error(
        "lease on lock {} (fencing token {token}) {}; renew at {now} refused",
        Quoted(.name),
        Ended(*.deadline, *.now)
    )]
    Expired {
        /// The lock's name.
        name: String,
        /// The fencing token of the lapsed lease.
        token: u64,
        /// The lease's deadline as its handle last knew it.
        deadline: Timestamp,
        /// When the renew was attempted, on the engine's clock.
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

/// What is wrong with a name or an owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// About how many bytes of a refused value, quoted and escaped, an error message shows.
const PREVIEW_BYTES: usize = 60;

/// Displays a value quoted and escaped as `{:?}` does, cut after about [`PREVIEW_BYTES`]
/// bytes of that with a note of its full length, so that a megabyte of bad input (or a short
/// run of characters that escape to ten bytes each) does not become a long error message.
pub(crate) struct Quoted<'a>(pub(crate) &'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut written = 1;
        f.write_char('"')?;
        for ch in self.0.chars() {
            if written >= PREVIEW_BYTES {
                return write!(f, "\"… ({} bytes)", self.0.len());
            }
            match ch {
                // `{:?}` on a str leaves single quotes alone.
                '\'' => {
                    f.write_char('\'')?;
                    written += 1;
                }
                _ => {
                    for escaped in ch.escape_debug() {
                        f.write_char(escaped)?;
                        written += escaped.len_utf8();
                    }
                }
            }
        }
        f.write_char('"')
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

/// How a lease that a renew found gone ended: at its deadline, or before it (released, or
/// force-released by an operator).
struct Ended(Timestamp, Timestamp);

impl fmt::Display for Ended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Ended(deadline, now) = *self;
        if now >= deadline {
            write!(f, "lapsed at its deadline {deadline}")
        } else {
            write!(f, "was released before its deadline {deadline}")
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

    fn preview(value: &str) -> String {
        Quoted(value).to_string()
    }

    #[test]
    fn quoted_values_are_escaped_and_shortened() {
        assert_eq!(preview("a\u{7}b"), "\"a\\u{7}b\"");
        let long = "x".repeat(1000);
        let p = preview(&long);
        assert!(p.starts_with("\"xxxx"));
        assert!(p.ends_with("\"… (1000 bytes)"), "{p}");
        assert!(p.len() < 80);
        assert_eq!(
            preview("it's \"q\"\n"),
            alloc::format!("{:?}", "it's \"q\"\n")
        );
        let wide = "\u{2ee5e}\u{1}".repeat(40);
        assert!(preview(&wide).len() < 100, "{}", preview(&wide));
    }

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
            deadline: Timestamp::from_millis(5),
            now: Timestamp::from_millis(6),
        };
        assert!(
            e.to_string()
                .starts_with("lease on lock \"short\" (fencing token 7)")
        );
        let e = LockError::Unavailable {
            reason: "connection refused".into(),
        };
        assert_eq!(e.to_string(), "lock engine unavailable: connection refused");
    }
}
