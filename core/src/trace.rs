//! The `tracing` feature's events, in one place: each function is empty without the feature.
//!
//! Every event is emitted after the shard's lock is released (a subscriber is user code), with
//! the target `alkstore` and these fields: `name`, `owner`, `token`, `deadline` (nanoseconds
//! on the engine's clock), and `error` where a call was refused.

use crate::error::LockError;
use crate::lease::LeaseInfo;

/// How a lease was granted.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(feature = "tracing"), allow(dead_code))]
pub(crate) enum How {
    /// By `try_lock` (or an `acquire` on a free name).
    Directly,
    /// Handed to a waiting `acquire` by a release or a lapse.
    HandedOff,
}

/// A lease was granted.
#[inline(always)]
pub(crate) fn granted(lease: &LeaseInfo, how: How) {
    #[cfg(feature = "tracing")]
    tracing::debug!(
        target: "alkstore",
        name = lease.name(),
        owner = lease.owner(),
        token = lease.token(),
        deadline = lease.deadline().as_nanos(),
        handed_off = matches!(how, How::HandedOff),
        "lock granted"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (lease, how);
}

/// A renewal was refused (the lease was lost, or the ttl was refused).
#[inline(always)]
pub(crate) fn renew_refused(lease: &LeaseInfo, error: &LockError) {
    #[cfg(feature = "tracing")]
    tracing::info!(
        target: "alkstore",
        name = lease.name(),
        owner = lease.owner(),
        token = lease.token(),
        error = %error,
        "renew refused"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (lease, error);
}

/// A holder's `lapsed()` or `keep_alive` found its lease gone.
#[inline(always)]
pub(crate) fn lapse_seen(lease: &LeaseInfo, how: &LockError) {
    #[cfg(feature = "tracing")]
    tracing::info!(
        target: "alkstore",
        name = lease.name(),
        owner = lease.owner(),
        token = lease.token(),
        error = %how,
        "lease lost"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (lease, how);
}

/// An operator force-released a lease.
#[inline(always)]
pub(crate) fn force_released(lease: &LeaseInfo) {
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
