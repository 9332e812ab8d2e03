//! Request ids: process-unique and unguessable, so that a request's retry, its withdrawal
//! and its wake-up message all find it.

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};

/// A new id: 16 hex digits of a random hash, the process id, and a counter.
///
/// # Example
/// ```
/// let (a, b) = (alkstore_kit::new_id(), alkstore_kit::new_id());
/// assert_ne!(a, b);
/// assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
/// ```
pub fn new_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let random = RandomState::new().hash_one(n);
    format!("{random:016x}{:08x}{n:x}", std::process::id())
}
