//! [`LeaseInfo`]: one grant, as seen by whoever holds or inspects it, and the text of a lease.
//!
//! The table keeps each lease's name and owner in one allocation, `name` + NUL + `owner`
//! (a `Box<str>`, no reference count). Names never contain control characters, so the
//! first NUL always ends the name; owners may contain anything. Handles and `LeaseInfo`s
//! keep their own copy ([`TextCopy`]), inline when it is short, so that granting and
//! releasing a lease costs one allocation and no reference counting.

use alloc::boxed::Box;
use core::fmt;

use crate::time::Timestamp;

/// Separates the name from the owner in a lease's text.
const SEPARATOR: char = '\0';

/// `name` + NUL + `owner`, in one allocation of exactly that size.
pub(crate) fn lease_text(name: &str, owner: &str) -> Box<str> {
    // One allocation of exactly the joined length, so `into_boxed_str` does not reallocate.
    [name, "\0", owner].concat().into_boxed_str()
}

/// Whether `text` (built by [`lease_text`]) is the text of a lease named `name`.
/// Exact only for a `name` with no NUL, which validated names never contain.
#[inline]
pub(crate) fn text_has_name(text: &str, name: &str) -> bool {
    text.len() > name.len() && text.as_bytes()[name.len()] == 0 && text.starts_with(name)
}

/// The name part of a lease's text.
#[inline]
pub(crate) fn text_name(text: &str) -> &str {
    match text.find(SEPARATOR) {
        Some(end) => &text[..end],
        None => text,
    }
}

/// Texts up to this many bytes are copied inline into handles, without an allocation.
const INLINE: usize = 54;

/// A copy of a lease's `name\0owner` text: inline when short, boxed otherwise.
#[derive(Clone)]
pub(crate) enum TextCopy {
    Inline { len: u8, bytes: [u8; INLINE] },
    Boxed(Box<str>),
}

impl TextCopy {
    pub(crate) fn of(text: &str) -> Self {
        match u8::try_from(text.len()) {
            Ok(len) if text.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..text.len()].copy_from_slice(text.as_bytes());
                TextCopy::Inline { len, bytes }
            }
            _ => TextCopy::Boxed(text.into()),
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        match self {
            // Copied from a `str`, so this never fails; the check is what keeps it safe code.
            TextCopy::Inline { len, bytes } => {
                core::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default()
            }
            TextCopy::Boxed(text) => text,
        }
    }
}

/// A lease as granted: its name, owner, fencing token and deadline.
///
/// Returned by [`LockRegistry::holder`](crate::LockRegistry::holder) (a snapshot of the
/// current holder) and by the [`LockTable`](crate::LockTable) state machine, whose
/// `renew`, `release` and `is_held` take it back to identify the grant.
///
/// # Example
/// ```
/// use alkstore_mem::{LockRegistry, ManualClock, Timestamp};
/// use core::time::Duration;
///
/// let registry = LockRegistry::new(ManualClock::new());
/// let lock = registry.try_lock("report", "worker-7", Duration::from_secs(30)).unwrap().unwrap();
/// let info = registry.holder("report").expect("held");
/// assert_eq!((info.name(), info.owner()), ("report", "worker-7"));
/// assert_eq!(info.token(), lock.token());
/// assert_eq!(info.deadline(), Timestamp::from_millis(30_000));
/// ```
#[derive(Clone)]
pub struct LeaseInfo {
    text: TextCopy,
    name_len: usize,
    pub(crate) hash: u64,
    pub(crate) token: u64,
    pub(crate) deadline: Timestamp,
}

impl LeaseInfo {
    /// A lease as another engine reports it: `name` held by `owner` with fencing `token`
    /// until `deadline` (on that engine's clock). Remote engines (`alkstore-redis`) build
    /// their [`holder`](crate::LockStore::holder) answers with it.
    ///
    /// A `LeaseInfo` built by hand identifies no grant of an in-memory
    /// [`LockTable`](crate::LockTable): it carries none of the table's lookup data (its
    /// internal hash is 0), so handing it to the table's `renew`, `release` or `is_held` is
    /// not a way to address a lease there. It compares equal to any `LeaseInfo` with the
    /// same name, owner, token and deadline.
    ///
    /// # Example
    /// ```
    /// use alkstore_mem::{LeaseInfo, Timestamp};
    ///
    /// let info = LeaseInfo::new("invoice/1001", "worker-2", 7, Timestamp::from_millis(1_500));
    /// assert_eq!((info.name(), info.owner(), info.token()), ("invoice/1001", "worker-2", 7));
    /// ```
    pub fn new(name: &str, owner: &str, token: u64, deadline: Timestamp) -> Self {
        Self::from_text(&lease_text(name, owner), name.len(), 0, token, deadline)
    }

    /// A snapshot of a grant whose `name\0owner` text is `text`.
    pub(crate) fn from_text(
        text: &str,
        name_len: usize,
        hash: u64,
        token: u64,
        deadline: Timestamp,
    ) -> Self {
        LeaseInfo {
            text: TextCopy::of(text),
            name_len,
            hash,
            token,
            deadline,
        }
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        self.text.as_str().get(..self.name_len).unwrap_or_default()
    }

    /// Who holds the lease.
    pub fn owner(&self) -> &str {
        self.text
            .as_str()
            .get(self.name_len + 1..)
            .unwrap_or_default()
    }

    /// The fencing token of this grant: larger than every token granted before it in the
    /// same registry, and kept by renewals.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// When the lease lapses: it is live while `now < deadline`.
    pub fn deadline(&self) -> Timestamp {
        self.deadline
    }
}

impl fmt::Debug for LeaseInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseInfo")
            .field("name", &self.name())
            .field("owner", &self.owner())
            .field("token", &self.token)
            .field("deadline", &self.deadline)
            .finish()
    }
}

impl PartialEq for LeaseInfo {
    fn eq(&self, other: &Self) -> bool {
        self.token == other.token
            && self.deadline == other.deadline
            && self.text.as_str() == other.text.as_str()
    }
}

impl Eq for LeaseInfo {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_inline_when_short_and_boxed_when_long() {
        let short = lease_text("tenant-3/job/000123", "worker-1");
        assert!(matches!(TextCopy::of(&short), TextCopy::Inline { .. }));
        let long_name = "n".repeat(200);
        let long = lease_text(&long_name, "ü-owner\0with nul");
        assert!(matches!(TextCopy::of(&long), TextCopy::Boxed(_)));
        for text in [&short, &long] {
            let name_len = text_name(text).len();
            let info = LeaseInfo::from_text(text, name_len, 0, 1, Timestamp::ZERO);
            assert_eq!(alloc::format!("{}\0{}", info.name(), info.owner()), **text);
        }
        assert_eq!(text_name(&long), long_name);
        assert!(text_has_name(&long, &long_name));
        assert!(!text_has_name(&long, "n"));
    }
}
