//! Entry checks for names, owners and durations, run before any state changes.
//!
//! The checks return a small [`Refusal`] that allocates nothing; it becomes a
//! [`LockError`] (which quotes the value) only when a caller is actually refused.

use core::time::Duration;

use crate::config::Config;
use crate::error::{InputProblem, LockError, preview};

/// The prefix of names kept for alkstore itself; `try_lock` refuses them with
/// [`LockError::ReservedName`]. Matched ASCII case-insensitively, so `"ALK:x"` is reserved too.
pub const RESERVED_PREFIX: &str = "alk:";

/// A refused input, before it is turned into a [`LockError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    Name(InputProblem),
    Reserved,
    Owner(InputProblem),
    Ttl,
}

impl Refusal {
    /// The error for this refusal, quoting the refused value.
    pub(crate) fn into_error(self, name: &str, owner: &str, ttl: Duration) -> LockError {
        match self {
            Refusal::Name(problem) => LockError::InvalidName {
                name: preview(name),
                problem,
            },
            Refusal::Reserved => LockError::ReservedName {
                name: preview(name),
            },
            Refusal::Owner(problem) => LockError::InvalidOwner {
                owner: preview(owner),
                problem,
            },
            Refusal::Ttl => LockError::InvalidTtl { ttl },
        }
    }
}

/// Checks a name: not empty, at most `config.max_name_len` bytes, no control character, and
/// not beginning with [`RESERVED_PREFIX`].
pub(crate) fn check_name(name: &str, config: &Config) -> Result<(), Refusal> {
    if name.is_empty() {
        return Err(Refusal::Name(InputProblem::Empty));
    }
    let max = config.get_max_name_len();
    if name.len() > max {
        return Err(Refusal::Name(InputProblem::TooLong {
            len: name.len(),
            max,
        }));
    }
    if let Some((index, ch)) = first_control_char(name) {
        return Err(Refusal::Name(InputProblem::ControlCharacter { index, ch }));
    }
    if is_reserved(name) {
        return Err(Refusal::Reserved);
    }
    Ok(())
}

/// Checks an owner: not empty and at most `config.max_owner_len` bytes. Any other UTF-8 is fine.
pub(crate) fn check_owner(owner: &str, config: &Config) -> Result<(), Refusal> {
    if owner.is_empty() {
        return Err(Refusal::Owner(InputProblem::Empty));
    }
    let max = config.get_max_owner_len();
    if owner.len() > max {
        return Err(Refusal::Owner(InputProblem::TooLong {
            len: owner.len(),
            max,
        }));
    }
    Ok(())
}

/// Checks a lease duration: zero is refused, anything else (up to `Duration::MAX`) is fine.
pub(crate) fn check_ttl(ttl: Duration) -> Result<(), Refusal> {
    if ttl.is_zero() {
        Err(Refusal::Ttl)
    } else {
        Ok(())
    }
}

/// All checks of a lock request, in the order their errors take precedence.
pub(crate) fn check_request(
    name: &str,
    owner: &str,
    ttl: Duration,
    config: &Config,
) -> Result<(), LockError> {
    check_name(name, config)
        .and_then(|()| check_owner(owner, config))
        .and_then(|()| check_ttl(ttl))
        .map_err(|refusal| refusal.into_error(name, owner, ttl))
}

fn is_reserved(name: &str) -> bool {
    let prefix = RESERVED_PREFIX.as_bytes();
    name.len() >= prefix.len() && name.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// The first control character (Unicode category Cc: C0, DEL and C1) and its byte offset.
fn first_control_char(name: &str) -> Option<(usize, char)> {
    // C0 and DEL are single bytes; C1 (U+0080..=U+009F) is encoded as 0xC2 0x80..=0x9F.
    // Most names are plain text, so a byte scan decides before any char decoding.
    let suspicious = name.bytes().any(|b| b < 0x20 || b == 0x7f || b == 0xc2);
    if !suspicious {
        return None;
    }
    name.char_indices().find(|(_, c)| c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> Result<(), Refusal> {
        check_name(n, &Config::default())
    }

    #[test]
    fn control_characters_are_found_in_every_range() {
        for ch in ['\0', '\u{1f}', '\u{7f}', '\u{80}', '\u{9f}'] {
            let n = alloc::format!("ab{ch}c");
            assert_eq!(
                name(&n),
                Err(Refusal::Name(InputProblem::ControlCharacter {
                    index: 2,
                    ch
                }))
            );
        }
        // 0xC2 also starts ordinary characters such as U+00A0..U+00BF.
        assert_eq!(name("price\u{a3}5"), Ok(()));
        assert_eq!(name("tenant-3/job/000123 ü ✓ 🚀"), Ok(()));
    }

    #[test]
    fn reserved_prefix_is_case_insensitive() {
        assert_eq!(name("alk:x"), Err(Refusal::Reserved));
        assert_eq!(name("AlK:"), Err(Refusal::Reserved));
        assert_eq!(name("alk"), Ok(()));
        assert_eq!(name("xalk:"), Ok(()));
    }
}
