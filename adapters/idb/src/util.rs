//! Small helpers: µs conversions, errors, a two-way race, sleeps.

use core::future::{Future, poll_fn};
use core::pin::pin;
use core::task::Poll;
use core::time::Duration;

use alkstore_mem::{LockError, Timestamp, TtlProblem};
use alkstore_mem_web::TimeoutSleep;

use crate::tx::row::MAX_TTL_US;

/// `d` in whole µs, rounded up (a 1 ns ttl is 1 µs, never 0) and capped at 100 years.
pub(crate) fn micros(d: Duration) -> u64 {
    let us = d.as_nanos().div_ceil(1000);
    u64::try_from(us).unwrap_or(u64::MAX).min(MAX_TTL_US)
}

/// µs on the engine's clock as a [`Timestamp`] (ns since the Unix epoch).
pub(crate) fn stamp(us: u64) -> Timestamp {
    Timestamp::from_nanos(us.saturating_mul(1000))
}

/// `LockError::Unavailable` with this reason.
pub(crate) fn unavailable(reason: impl Into<String>) -> LockError {
    LockError::Unavailable {
        reason: reason.into(),
    }
}

/// A row that does not decode.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub(crate) fn codec_err(row: &str, problem: &str) -> LockError {
    unavailable(format!(
        "IndexedDB holds a malformed row for {row:?} ({problem}); was the database written by \
         something other than alkstore-idb?"
    ))
}

/// Which of two futures finished first.
pub(crate) enum Either<A, B> {
    Left(A),
    Right(B),
}

/// Polls both, `a` first; resolves with the first to finish (the other is dropped).
pub(crate) async fn race<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let mut a = pin!(a);
    let mut b = pin!(b);
    poll_fn(|cx| {
        if let Poll::Ready(x) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::Left(x));
        }
        if let Poll::Ready(y) = b.as_mut().poll(cx) {
            return Poll::Ready(Either::Right(y));
        }
        Poll::Pending
    })
    .await
}

/// A `setTimeout` sleep of `us` µs (rounded up to whole ms, plus one so that a deadline
/// has passed when it ends).
pub(crate) fn sleep_us(us: u64) -> TimeoutSleep {
    TimeoutSleep::new((us.div_ceil(1000) + 1).min(i32::MAX as u64) as f64)
}

/// `Expired` for a lease.
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
pub(crate) fn zero_ttl() -> LockError {
    LockError::InvalidTtl {
        ttl: Duration::ZERO,
        problem: TtlProblem::Zero,
    }
}

/// `InvalidTtl` for a keep-alive on a lease too short to renew within the io_timeout.
pub(crate) fn too_short_to_keep_alive(ttl: Duration, io_timeout: Duration) -> LockError {
    LockError::InvalidTtl {
        ttl,
        problem: TtlProblem::TooShortToKeepAlive { io_timeout },
    }
}
