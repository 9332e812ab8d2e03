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
/// # Example
/// ```
/// use alkstore_mem::{LockError, LockRegistry, ManualClock};
/// use core::time::Duration;
///
/// let registry = LockRegistry::new(ManualClock::new());
/// let err = registry.try_lock("", "worker", Duration::from_secs(1)).unwrap_err();
/// assert!(matches!(err, LockError::InvalidName { .. }));
/// assert_eq!(err.to_string(), "invalid lock name \"\": it is empty");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// The name is empty, longer than [`Config::max_name_len`](crate::Config::max_name_len)
    /// or contains a control character.
    #[error("invalid lock name {name}: {problem}")]
    InvalidName {
        /// The name, quoted and escaped, shortened if long.
        name: String,
        /// What is wrong with it.
        problem: InputProblem,
    },
    /// The name begins with [`RESERVED_PREFIX`](crate::RESERVED_PREFIX) (ASCII case-insensitive).
    #[error(
        "lock name {name} is reserved: names beginning with \"alk:\" (in any case) are kept for alkstore itself"
    )]
    ReservedName {
        /// The name, quoted and escaped, shortened if long.
        name: String,
    },
    /// The owner is empty or longer than [`Config::max_owner_len`](crate::Config::max_owner_len).
    #[error("invalid owner {owner}: {problem}")]
    InvalidOwner {
        /// The owner, quoted and escaped, shortened if long.
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
    /// `renew` came at or after the lease's deadline; the lease stays lapsed.
    #[error(
        "lease on lock {name} (fencing token {token}) lapsed at {deadline}; renew at {now} refused"
    )]
    Expired {
        /// The lock's name, quoted and escaped, shortened if long.
        name: String,
        /// The fencing token of the lapsed lease.
        token: u64,
        /// When the lease lapsed.
        deadline: Timestamp,
        /// When the renew was attempted (as the table saw it).
        now: Timestamp,
    },
    /// The table already holds [`Config::max_locks`](crate::Config::max_locks) live leases and
    /// the name is not among them.
    #[error(
        "lock table is full: {max} live leases (Config::max_locks) leave no room for lock {name}"
    )]
    CapacityExceeded {
        /// The refused name, quoted and escaped, shortened if long.
        name: String,
        /// The configured limit.
        max: usize,
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
                write!(f, "it is {len} bytes long, over the limit of {max}")
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

/// The value quoted and escaped as `{:?}` does, cut after about [`PREVIEW_BYTES`] bytes of
/// that with a note of its full length, so that a megabyte of bad input (or a short run of
/// characters that escape to ten bytes each) does not become a long error message.
pub(crate) fn preview(value: &str) -> String {
    let mut out = String::from("\"");
    for ch in value.chars() {
        if out.len() >= PREVIEW_BYTES {
            let _ = write!(out, "\"… ({} bytes)", value.len());
            return out;
        }
        match ch {
            // `{:?}` on a str leaves single quotes alone.
            '\'' => out.push('\''),
            _ => out.extend(ch.escape_debug()),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn preview_quotes_escapes_and_shortens() {
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
    fn messages_name_the_value_and_the_limit() {
        let e = LockError::InvalidOwner {
            owner: preview("bob"),
            problem: InputProblem::TooLong { len: 300, max: 256 },
        };
        assert_eq!(
            e.to_string(),
            "invalid owner \"bob\": it is 300 bytes long, over the limit of 256"
        );
        let e = LockError::InvalidName {
            name: preview("a\nb"),
            problem: InputProblem::ControlCharacter { index: 1, ch: '\n' },
        };
        assert_eq!(
            e.to_string(),
            "invalid lock name \"a\\nb\": it contains the control character U+000A at byte 1"
        );
    }
}
