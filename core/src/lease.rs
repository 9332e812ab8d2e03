//! [`LeaseInfo`]: one grant, as seen by whoever holds or inspects it, and the text of a lease.
//!
//! A lease's name and owner are kept together as one [`Text`], `name` + NUL + `owner`.
//! Names never contain control characters, so the first NUL always ends the name; owners
//! may contain anything. A short text (the common case: `tenant-3/job/000123` held by
//! `worker-1`) is stored inline, both in the table's slot and in the handle's copy, so a
//! grant and its release allocate nothing; a longer one is one shared allocation, which the
//! slot and the handle both point to.

use alloc::string::String;
use alloc::sync::Arc;
use core::fmt;

use crate::time::Timestamp;

/// Texts up to this many bytes (name + NUL + owner) are stored inline, without an
/// allocation. With the tag and the length byte, a [`Text`] is 32 bytes.
pub(crate) const INLINE: usize = 30;

/// A lease's `name\0owner` text: inline when it is short, else one shared allocation.
#[derive(Clone)]
pub(crate) enum Text {
    /// The first `len` bytes of `bytes`.
    Inline { len: u8, bytes: [u8; INLINE] },
    /// Too long to be inline: shared by the table's slot and the handles' copies.
    Shared(Arc<str>),
}

impl Text {
    /// `name` + NUL + `owner`; inline (no allocation) when it fits.
    #[inline]
    pub(crate) fn join(name: &str, owner: &str) -> Self {
        let (n, o) = (name.as_bytes(), owner.as_bytes());
        let len = n.len() + 1 + o.len();
        if len <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..n.len()].copy_from_slice(n);
            bytes[n.len() + 1..len].copy_from_slice(o);
            Text::Inline {
                len: len as u8,
                bytes,
            }
        } else {
            Text::shared(name, owner)
        }
    }

    /// `name` + NUL + `owner` in one allocation of its own (a stack buffer first, when the
    /// text fits one, so that the `Arc` is the only allocation).
    #[cold]
    #[inline(never)]
    fn shared(name: &str, owner: &str) -> Self {
        const STACK: usize = 600;
        let len = name.len() + 1 + owner.len();
        if len <= STACK {
            let mut buffer = [0u8; STACK];
            buffer[..name.len()].copy_from_slice(name.as_bytes());
            buffer[name.len() + 1..len].copy_from_slice(owner.as_bytes());
            // Two strs and a NUL: valid UTF-8, so this never fails.
            let text = core::str::from_utf8(&buffer[..len]).unwrap_or_default();
            return Text::Shared(Arc::from(text));
        }
        let joined: String = [name, "\0", owner].concat();
        Text::Shared(Arc::from(joined))
    }

    /// No text: what a waiter keeps while the table holds its text.
    pub(crate) const fn empty() -> Self {
        Text::Inline {
            len: 0,
            bytes: [0; INLINE],
        }
    }

    /// The text's bytes.
    #[inline]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            Text::Inline { len, bytes } => bytes.get(..usize::from(*len)).unwrap_or_default(),
            Text::Shared(text) => text.as_bytes(),
        }
    }

    /// The text as a `str` (validated again for an inline text: safe code has no other way
    /// back from bytes; the hot paths compare bytes and never call this).
    pub(crate) fn as_str(&self) -> &str {
        match self {
            // Copied from `str`s, so this never fails; the check is what keeps it safe code.
            Text::Inline { .. } => core::str::from_utf8(self.as_bytes()).unwrap_or_default(),
            Text::Shared(text) => text,
        }
    }

    /// Whether this is the text of a lease named `name`. Exact only for a `name` with no
    /// NUL, which validated names never contain.
    #[inline]
    pub(crate) fn has_name(&self, name: &str) -> bool {
        let (text, name) = (self.as_bytes(), name.as_bytes());
        text.len() > name.len() && text[name.len()] == 0 && text.starts_with(name)
    }

    /// The length of the name part: up to the first NUL.
    pub(crate) fn name_len(&self) -> usize {
        let text = self.as_bytes();
        text.iter().position(|&b| b == 0).unwrap_or(text.len())
    }

    /// The allocation behind a long text, if any: what freeing this text frees.
    #[inline]
    pub(crate) fn into_shared(self) -> Option<Arc<str>> {
        match self {
            Text::Inline { .. } => None,
            Text::Shared(text) => Some(text),
        }
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
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
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(
        into = "crate::serde_data::LeaseData",
        from = "crate::serde_data::LeaseData"
    )
)]
pub struct LeaseInfo {
    pub(crate) text: Text,
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
        Self::from_text(Text::join(name, owner), name.len(), 0, token, deadline)
    }

    /// A snapshot of a grant whose `name\0owner` text is `text`, its name `name_len` bytes.
    #[inline]
    pub(crate) fn from_text(
        text: Text,
        name_len: usize,
        hash: u64,
        token: u64,
        deadline: Timestamp,
    ) -> Self {
        LeaseInfo {
            text,
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
    #[inline]
    pub fn token(&self) -> u64 {
        self.token
    }

    /// When the lease lapses: it is live while `now < deadline`.
    #[inline]
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
        // The name's length too: `"a\0b"` held by `"c"` is not `"a"` held by `"b\0c"`, though
        // both join to the same text.
        self.token == other.token
            && self.deadline == other.deadline
            && self.name_len == other.name_len
            && self.text.as_bytes() == other.text.as_bytes()
    }
}

impl Eq for LeaseInfo {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_inline_when_short_and_shared_when_long() {
        assert_eq!(core::mem::size_of::<Text>(), 32);
        let short = Text::join("tenant-3/job/000123", "worker-1");
        assert!(matches!(short, Text::Inline { .. }));
        let fits = Text::join("tenant-15/job/0000123", "worker-1");
        assert!(matches!(fits, Text::Inline { len: 30, .. }));
        let long_name = "n".repeat(200);
        let long = Text::join(&long_name, "ü-owner\0with nul");
        assert!(matches!(long, Text::Shared(_)));
        let huge_owner = "o".repeat(1_000);
        let huge = Text::join("job", &huge_owner);
        assert!(matches!(huge, Text::Shared(_)));
        for (text, name, owner) in [
            (&short, "tenant-3/job/000123", "worker-1"),
            (&fits, "tenant-15/job/0000123", "worker-1"),
            (&long, long_name.as_str(), "ü-owner\0with nul"),
            (&huge, "job", huge_owner.as_str()),
        ] {
            assert_eq!(text.name_len(), name.len());
            assert!(text.has_name(name));
            assert!(!text.has_name(&name[..1]));
            let info = LeaseInfo::from_text(text.clone(), name.len(), 0, 1, Timestamp::ZERO);
            assert_eq!((info.name(), info.owner()), (name, owner));
        }
    }
}
