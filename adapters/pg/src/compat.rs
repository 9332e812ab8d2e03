//! The core's error values and future aliases as this engine builds them, in one place.

use core::future::Future;
use core::pin::Pin;
use core::time::Duration;

use alkstore_mem::{LockError, Timestamp};

/// A boxed, `Send` future borrowing for `'a`: the nameable type of this engine's futures.
pub type BoxedFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// `Expired` for the lease `name`/`token` of `ttl`, which ended at `deadline`, seen at `now`.
pub(crate) fn expired(
    name: &str,
    token: u64,
    _ttl: Duration,
    deadline: Timestamp,
    now: Timestamp,
) -> LockError {
    LockError::Expired {
        name: name.into(),
        token,
        deadline,
        now,
    }
}

/// `InvalidTtl` for a zero ttl.
pub(crate) fn zero_ttl(ttl: Duration) -> LockError {
    LockError::InvalidTtl { ttl }
}

/// `InvalidTtl` for a lease too short to keep alive with renewals that may take `io_timeout`.
pub(crate) fn too_short_to_keep_alive(ttl: Duration, _io_timeout: Duration) -> LockError {
    LockError::InvalidTtl { ttl }
}

/// The renewal interval of `keep_alive(every)` on a lease of `ttl`: zero means a third of the
/// ttl; anything above half the ttl is half the ttl (so a typo cannot turn keep-alive off);
/// never below 1 ns.
pub(crate) fn keep_alive_interval(every: Duration, ttl: Duration) -> Duration {
    let every = if every.is_zero() { ttl / 3 } else { every };
    every.min(ttl / 2).max(Duration::from_nanos(1))
}
