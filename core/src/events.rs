//! The events of the `tracing` feature, for every engine: each function here emits one event
//! (target `alkstore`) with the feature and does nothing without it, so an engine calls them
//! unconditionally and its own `tracing` feature only turns on this crate's.
//!
//! Fields: `name`, `owner`, `token`, `deadline` (nanoseconds on the engine's clock),
//! `handed_off`, `error` (its `Display`), and `context` (the lock's name or the operation)
//! where a call could not reach its engine. An engine emits them outside any lock of its own
//! (a subscriber is user code), and a grant's only once its handle exists, so that a
//! subscriber that panics unwinds through the handle's drop, which releases the lease.
//!
//! # Example
//! ```
//! use alkstore_mem::{Timestamp, events};
//!
//! // What an engine does once it has built the handle of a grant.
//! events::granted("invoice/1001", "worker-1", 7, Timestamp::from_millis(1_500), false);
//! ```

use crate::error::LockError;
use crate::lease::LeaseInfo;
use crate::time::Timestamp;

/// A lease was granted to `owner` (`handed_off`: to a waiting `acquire`, by a release or a
/// lapse). Level `DEBUG`, message "lock granted".
#[inline(always)]
pub fn granted(name: &str, owner: &str, token: u64, deadline: Timestamp, handed_off: bool) {
    #[cfg(feature = "tracing")]
    tracing::debug!(
        target: "alkstore",
        name,
        owner,
        token,
        deadline = deadline.as_nanos(),
        handed_off,
        "lock granted"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (name, owner, token, deadline, handed_off);
}

/// A renewal was refused: the lease was lost, or the ttl was. Level `INFO`, message "renew
/// refused".
#[inline(always)]
pub fn renew_refused(name: &str, owner: &str, token: u64, error: &LockError) {
    #[cfg(feature = "tracing")]
    tracing::info!(target: "alkstore", name, owner, token, error = %error, "renew refused");
    #[cfg(not(feature = "tracing"))]
    let _ = (name, owner, token, error);
}

/// A holder found its lease gone (`lapsed()`, `keep_alive`, a refused renewal of a remote
/// engine). Level `INFO`, message "lease lost".
#[inline(always)]
pub fn lease_lost(name: &str, token: u64, how: &LockError) {
    #[cfg(feature = "tracing")]
    tracing::info!(target: "alkstore", name, token, error = %how, "lease lost");
    #[cfg(not(feature = "tracing"))]
    let _ = (name, token, how);
}

/// An operator force-released `lease`. Level `WARN`, message "lock force-released".
#[inline(always)]
pub fn force_released(lease: &LeaseInfo) {
    #[cfg(feature = "tracing")]
    tracing::warn!(
        target: "alkstore",
        name = lease.name(),
        owner = lease.owner(),
        token = lease.token(),
        deadline = lease.deadline().as_nanos(),
        "lock force-released"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = lease;
}

/// A call could not reach its engine ([`LockError::Unavailable`]); `context` is the lock's
/// name, or the operation where there is none. Level `WARN`, message "lock engine
/// unavailable".
#[inline(always)]
pub fn unavailable(context: &str, error: &LockError) {
    #[cfg(feature = "tracing")]
    tracing::warn!(target: "alkstore", context, error = %error, "lock engine unavailable");
    #[cfg(not(feature = "tracing"))]
    let _ = (context, error);
}

/// A clean-up call (the release of a dropped handle, the withdrawal of a request whose caller
/// went away or was answered `Unavailable`) failed and will be tried again; `context` is the
/// lock's name. Level `INFO`, message "lock clean-up retried".
#[inline(always)]
pub fn cleanup_retried(context: &str, attempt: u32, error: &LockError) {
    #[cfg(feature = "tracing")]
    tracing::info!(target: "alkstore", context, attempt, error = %error, "lock clean-up retried");
    #[cfg(not(feature = "tracing"))]
    let _ = (context, attempt, error);
}

/// A clean-up call failed on every attempt and is given up: a lease it was to end lapses at
/// its deadline, a queue entry once its heartbeat expires. Level `WARN`, message "lock
/// clean-up abandoned".
#[inline(always)]
pub fn cleanup_abandoned(context: &str, attempts: u32, error: &LockError) {
    #[cfg(feature = "tracing")]
    tracing::warn!(target: "alkstore", context, attempts, error = %error, "lock clean-up abandoned");
    #[cfg(not(feature = "tracing"))]
    let _ = (context, attempts, error);
}
