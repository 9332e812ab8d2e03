//! The core's error values as the kit builds them, in one place.

use core::time::Duration;

use alkstore_mem::{LockError, Timestamp, TtlProblem};

/// `LockError::Unavailable` with this reason.
///
/// # Example
/// ```
/// let err = alkstore_kit::unavailable("redis did not answer within 2s");
/// assert!(err.to_string().contains("did not answer"));
/// ```
pub fn unavailable(reason: impl Into<String>) -> LockError {
    LockError::Unavailable {
        reason: reason.into(),
    }
}

/// `Expired` for the lease `name`/`token` of `ttl`, which ended at `deadline`, seen at `now`.
pub(crate) fn expired(
    name: &str,
    token: u64,
    ttl: Duration,
    deadline: Timestamp,
    now: Timestamp,
) -> LockError {
    LockError::Expired {
        name: name.into(),
        token,
        ttl,
        deadline,
        now,
    }
}

/// `InvalidTtl` for a zero ttl.
pub(crate) fn zero_ttl(ttl: Duration) -> LockError {
    LockError::InvalidTtl {
        ttl,
        problem: TtlProblem::Zero,
    }
}

/// `InvalidTtl` for a lease too short to keep alive with renewals that may take `io_timeout`.
pub(crate) fn too_short_to_keep_alive(ttl: Duration, io_timeout: Duration) -> LockError {
    LockError::InvalidTtl {
        ttl,
        problem: TtlProblem::TooShortToKeepAlive { io_timeout },
    }
}
