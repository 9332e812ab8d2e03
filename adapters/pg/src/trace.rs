//! The `tracing` feature's events (target `alkstore`), in one place: each function is empty
//! without the feature. Fields: `name`, `owner`, `token`, `deadline` (nanoseconds on the
//! server's clock), and `error` where a call failed.

use alkstore_mem::{LeaseInfo, LockError};

/// A lease was granted (`handed_off`: to a waiting `acquire`).
#[inline(always)]
pub(crate) fn granted(name: &str, owner: &str, token: u64, deadline_ns: u64, handed_off: bool) {
    #[cfg(feature = "tracing")]
    tracing::debug!(
        target: "alkstore",
        name,
        owner,
        token,
        deadline = deadline_ns,
        handed_off,
        "lock granted"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (name, owner, token, deadline_ns, handed_off);
}

/// A call to PostgreSQL failed: `LockError::Unavailable`.
#[inline(always)]
pub(crate) fn unavailable(operation: crate::pool::Op, error: &LockError) {
    #[cfg(feature = "tracing")]
    tracing::warn!(target: "alkstore", operation = ?operation, error = %error, "lock engine unavailable");
    #[cfg(not(feature = "tracing"))]
    let _ = (operation, error);
}

/// A renewal was refused, or a holder found its lease gone.
#[inline(always)]
pub(crate) fn lost(name: &str, token: u64, error: &LockError) {
    #[cfg(feature = "tracing")]
    tracing::info!(target: "alkstore", name, token, error = %error, "lease lost");
    #[cfg(not(feature = "tracing"))]
    let _ = (name, token, error);
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
