//! Entry checks for names, owners and durations, run before any state changes.
//!
//! Every engine runs these same checks before it does anything, so that a request refused by
//! one engine is refused by all with the same [`LockError`]: the in-memory registry inside,
//! and remote engines (`alkstore-redis`) through the public [`check_request`] and
//! [`check_name`], before any round trip.
//!
//! Inside, the checks return a small `Refusal` that allocates nothing; it becomes a
//! [`LockError`] (which quotes the value) only when a caller is actually refused.

use core::time::Duration;

use crate::config::Config;
use crate::error::{InputProblem, LockError, TtlProblem, kept};

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
                name: kept(name, &problem),
                problem,
            },
            Refusal::Reserved => LockError::ReservedName { name: name.into() },
            Refusal::Owner(problem) => LockError::InvalidOwner {
                owner: kept(owner, &problem),
                problem,
            },
            Refusal::Ttl => LockError::InvalidTtl {
                ttl,
                problem: TtlProblem::Zero,
            },
        }
    }
}

/// Checks a name: not empty, at most `config.max_name_len` bytes, no control character, and
/// not beginning with [`RESERVED_PREFIX`].
pub(crate) fn name_refusal(name: &str, config: &Config) -> Result<(), Refusal> {
    if name.is_empty() {
        return Err(Refusal::Name(InputProblem::Empty));
    }
    let max = config.max_name_len();
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
    let max = config.max_owner_len();
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

/// Every check of a `try_lock`, in one pass over the name, before its lookup (so that the
/// lookup's comparison is exact and a grant needs no second check). The common case, a
/// clean request, costs a few length tests, one word-at-a-time scan of the name for control
/// characters (NUL among them) and a 4-byte prefix compare. Anything else (a refused
/// request, or a name with a 0xC2-led character, which the scan cannot clear by itself)
/// takes [`check_request`], which names the first problem in order of precedence.
#[inline]
pub(crate) fn quick_check(
    name: &str,
    owner: &str,
    ttl: Duration,
    config: &Config,
) -> Result<(), LockError> {
    let clean = !name.is_empty()
        && name.len() <= config.max_name_len()
        && !owner.is_empty()
        && owner.len() <= config.max_owner_len()
        && !ttl.is_zero()
        && !may_hold_control_char(name.as_bytes())
        && !is_reserved(name);
    if clean {
        Ok(())
    } else {
        check_request_cold(name, owner, ttl, config)
    }
}

/// [`check_request`], out of the hot path.
#[cold]
#[inline(never)]
fn check_request_cold(
    name: &str,
    owner: &str,
    ttl: Duration,
    config: &Config,
) -> Result<(), LockError> {
    check_request(name, owner, ttl, config)
}

/// Checks a lock name as every engine does: not empty, at most `config.max_name_len` bytes,
/// no control character, and not beginning with [`RESERVED_PREFIX`].
///
/// # Errors
/// [`LockError::InvalidName`] or [`LockError::ReservedName`], quoting `name`.
///
/// # Example
/// ```
/// use alkstore_mem::{Config, LockError, validate::check_name};
///
/// assert!(check_name("invoice/1001", &Config::default()).is_ok());
/// assert!(matches!(check_name("alk:x", &Config::default()), Err(LockError::ReservedName { .. })));
/// ```
pub fn check_name(name: &str, config: &Config) -> Result<(), LockError> {
    name_refusal(name, config).map_err(|refusal| refusal.into_error(name, "", Duration::ZERO))
}

/// All checks of a lock request (`try_lock`, `acquire`), as every engine runs them: the name
/// (see [`check_name`]), then the owner (not empty, at most `config.max_owner_len` bytes),
/// then the ttl (not zero), in that order of precedence.
///
/// # Errors
/// The first of [`LockError::InvalidName`], [`LockError::ReservedName`],
/// [`LockError::InvalidOwner`] and [`LockError::InvalidTtl`] that applies.
///
/// # Example
/// ```
/// use alkstore_mem::{Config, LockError, validate::check_request};
/// use core::time::Duration;
///
/// let config = Config::default();
/// assert!(check_request("job", "worker-1", Duration::from_secs(1), &config).is_ok());
/// let err = check_request("job", "", Duration::ZERO, &config).unwrap_err();
/// assert!(matches!(err, LockError::InvalidOwner { .. }), "the owner comes before the ttl");
/// ```
pub fn check_request(
    name: &str,
    owner: &str,
    ttl: Duration,
    config: &Config,
) -> Result<(), LockError> {
    name_refusal(name, config)
        .and_then(|()| check_owner(owner, config))
        .and_then(|()| check_ttl(ttl))
        .map_err(|refusal| refusal.into_error(name, owner, ttl))
}

#[inline]
fn is_reserved(name: &str) -> bool {
    // ORing 0x20 into a byte lower-cases exactly 'A'..='Z' among the bytes that can become
    // 'a', 'l' or 'k'; ':' is compared as it is. One word compare instead of four.
    const PREFIX: u32 = u32::from_le_bytes(*b"alk:");
    const LOWER_LETTERS: u32 = u32::from_le_bytes([0x20, 0x20, 0x20, 0x00]);
    match name.as_bytes().first_chunk::<4>() {
        Some(head) => u32::from_le_bytes(*head) | LOWER_LETTERS == PREFIX,
        None => false,
    }
}

/// The first control character (Unicode category Cc: C0, DEL and C1) and its byte offset.
fn first_control_char(name: &str) -> Option<(usize, char)> {
    if !may_hold_control_char(name.as_bytes()) {
        return None;
    }
    name.char_indices().find(|(_, c)| c.is_control())
}

/// A fast, conservative pre-check for [`first_control_char`]: `false` means the name holds no
/// control character; `true` means it may (C0 and DEL are single bytes below 0x20 or 0x7F;
/// C1, U+0080..=U+009F, is encoded as 0xC2 0x80..=0x9F, and 0xC2 also starts other
/// characters, which the exact check then clears).
#[inline]
fn may_hold_control_char(bytes: &[u8]) -> bool {
    any_byte(
        bytes,
        |x| has_less(x, 0x20) | has_less(x ^ (ONES * 0x7f), 1) | has_less(x ^ (ONES * 0xc2), 1),
        |b| b < 0x20 || b == 0x7f || b == 0xc2,
    )
}

const ONES: u64 = u64::from_le_bytes([0x01; 8]);
const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);

/// Whether some byte of the word `x` is below `n` (for n <= 0x80): the classic "hasless"
/// bit trick, exact about whether there is one.
#[inline]
fn has_less(x: u64, n: u64) -> bool {
    x.wrapping_sub(ONES * n) & !x & HIGHS != 0
}

/// Whether some byte of `bytes` passes `byte_test`, decided eight bytes at a time by
/// `word_test` (which must hold for every word with such a byte). Short inputs go byte by
/// byte; longer ones word by word, the last word overlapping the one before it.
#[inline]
fn any_byte(bytes: &[u8], word_test: impl Fn(u64) -> bool, byte_test: impl Fn(u8) -> bool) -> bool {
    let len = bytes.len();
    if len < 8 {
        return bytes.iter().any(|&b| byte_test(b));
    }
    let word_at = |i: usize| {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[i..i + 8]);
        u64::from_le_bytes(word)
    };
    let mut i = 0;
    while i + 8 < len {
        if word_test(word_at(i)) {
            return true;
        }
        i += 8;
    }
    word_test(word_at(len - 8))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> Result<(), Refusal> {
        name_refusal(n, &Config::default())
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
    fn the_fast_pre_check_never_misses_a_control_character() {
        // Every position in a 20-byte name, every control character, and a clean name.
        let controls = (0u32..0x20).chain([0x7f]).chain(0x80..0xa0);
        for ch in controls.map(|c| char::from_u32(c).unwrap()) {
            for pos in 0..20 {
                let mut n: alloc::string::String = "tenant-3/job/0001234".into();
                n.insert(pos, ch);
                assert!(may_hold_control_char(n.as_bytes()), "{n:?}");
                assert_eq!(first_control_char(&n), Some((pos, ch)));
            }
        }
        assert!(!may_hold_control_char(
            b"tenant-3/job/0001234 with ascii ~ only"
        ));
        for b in 0u8..=255 {
            let expected = b < 0x20 || b == 0x7f || b == 0xc2;
            let mut bytes = [b'a'; 16];
            bytes[11] = b;
            assert_eq!(may_hold_control_char(&bytes), expected, "byte {b:#x}");
        }
    }

    #[test]
    fn the_one_pass_check_refuses_a_nul_or_control_character_at_every_position() {
        let config = Config::default();
        for len in 1..40 {
            let clean: alloc::string::String =
                (0..len).map(|i| (b'a' + (i % 26) as u8) as char).collect();
            assert!(quick_check(&clean, "o", Duration::from_secs(1), &config).is_ok());
            for pos in 0..len {
                for ch in ['\0', '\u{1f}', '\u{7f}'] {
                    let mut bad = clean.clone().into_bytes();
                    bad[pos] = ch as u8;
                    let bad = alloc::string::String::from_utf8(bad).unwrap();
                    let err = quick_check(&bad, "o", Duration::from_secs(1), &config);
                    assert_eq!(
                        err,
                        Err(
                            Refusal::Name(InputProblem::ControlCharacter { index: pos, ch })
                                .into_error(&bad, "o", Duration::from_secs(1))
                        ),
                        "len {len} pos {pos}"
                    );
                }
            }
        }
        // 0xC2-led characters that are not controls pass, through the exact path.
        assert!(quick_check("price\u{a3}5", "o", Duration::from_secs(1), &config).is_ok());
        assert!(quick_check("ALK:x", "o", Duration::from_secs(1), &config).is_err());
    }

    #[test]
    fn reserved_prefix_is_case_insensitive() {
        assert_eq!(name("alk:x"), Err(Refusal::Reserved));
        assert_eq!(name("AlK:"), Err(Refusal::Reserved));
        assert_eq!(name("alk"), Ok(()));
        assert_eq!(name("xalk:"), Ok(()));
        // Bytes that differ from a letter only in bit 0x20 are not letters: not reserved.
        assert_eq!(
            name("alk\u{1a}"),
            Err(Refusal::Name(InputProblem::ControlCharacter {
                index: 3,
                ch: '\u{1a}'
            }))
        );
        assert_eq!(name("al@:"), Ok(()));
        assert_eq!(name("alK:x"), Err(Refusal::Reserved));
    }
}
