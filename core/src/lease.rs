//! [`LeaseInfo`]: one grant, as seen by whoever holds or inspects it.
//!
//! A lease's name and owner live in one shared allocation, `name` + NUL + `owner`, that the
//! table entry and every handle or `LeaseInfo` of that grant point at. Names never contain
//! control characters, so the first NUL always ends the name; owners may contain anything.

use alloc::string::String;
use alloc::sync::Arc;
use core::fmt;

use crate::time::Timestamp;

/// Separates the name from the owner in a lease's text.
const SEPARATOR: char = '\0';

/// Texts up to this many bytes are joined on the stack, so that building one costs a single
/// allocation (the `Arc`'s) instead of two.
const STACK_TEXT: usize = 128;

/// `name` + NUL + `owner`, in one allocation.
pub(crate) fn lease_text(name: &str, owner: &str) -> Arc<str> {
    let len = name.len() + 1 + owner.len();
    if len <= STACK_TEXT {
        let mut buf = [0u8; STACK_TEXT];
        buf[..name.len()].copy_from_slice(name.as_bytes());
        // buf[name.len()] is already the NUL separator.
        buf[name.len() + 1..len].copy_from_slice(owner.as_bytes());
        if let Ok(text) = core::str::from_utf8(&buf[..len]) {
            return Arc::from(text);
        }
    }
    let mut text = String::with_capacity(len);
    text.push_str(name);
    text.push(SEPARATOR);
    text.push_str(owner);
    Arc::from(text)
}

/// Whether `text` (built by [`lease_text`]) is the text of a lease named `name`.
/// `name` must contain no NUL, which validated names never do.
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

/// A lease as granted: its name, owner, fencing token and deadline.
///
/// Returned by [`LockRegistry::holder`](crate::LockRegistry::holder) (a snapshot of the
/// current holder) and by the [`LockTable`](crate::LockTable) state machine, whose
/// `renew`, `release` and `is_held` take it back to identify the grant.
/// Cloning one is cheap: name and owner are shared, not copied.
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
    pub(crate) text: Arc<str>,
    pub(crate) name_len: usize,
    pub(crate) hash: u64,
    pub(crate) token: u64,
    pub(crate) deadline: Timestamp,
}

impl LeaseInfo {
    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.text[..self.name_len]
    }

    /// Who holds the lease.
    pub fn owner(&self) -> &str {
        &self.text[self.name_len + 1..]
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
        self.token == other.token && self.deadline == other.deadline && self.text == other.text
    }
}

impl Eq for LeaseInfo {}
