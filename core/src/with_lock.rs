//! [`with_lock`]: acquire, run, keep alive, release, on any engine.

use core::future::{Future, poll_fn};
use core::pin::pin;
use core::task::Poll;
use core::time::Duration;

use crate::contract::{AcquireFuture, LockHandle, LockStore};
use crate::error::LockError;
use crate::lease::LeaseInfo;

/// Runs `body` while holding the lock `name`: waits up to `wait` for it, keeps the lease
/// alive while the body runs (renewing to `ttl` every third of it), and releases it after.
///
/// Resolves to `Ok(Some(value))` with the body's output, or `Ok(None)` when the wait elapsed
/// without a grant (the body never ran). The body gets the lease's [`LeaseInfo`]: pass its
/// [`token`](LeaseInfo::token) to whatever the lock protects.
///
/// If the lease is lost while the body runs (a renewal fails: it lapsed, was force-released,
/// or a remote engine could not be reached in time), the body is dropped at its next
/// `.await` and the renewal's error is returned ([`LockError::Expired`] for a lost lease).
/// A failed release after the body finished is not an error: the value is returned and the
/// lease lapses at its deadline.
///
/// On a remote engine, pick a `ttl` whose third leaves room for a renewal's round trip: a
/// renewal that cannot be answered in time ends the body (for `alkstore-redis`, keep its
/// `io_timeout`, 2 s by default, well below `ttl / 3`: a ttl of 10 s or more with the default).
///
/// # Errors
/// The errors of [`LockStore::acquire`] (bad input, a full store, an unreachable engine),
/// and the error of the renewal that failed when the lease was lost.
///
/// # Example
/// ```
/// use alkstore_mem::{LockRegistry, ManualClock, with_lock};
/// use core::time::Duration;
///
/// let registry = LockRegistry::new(ManualClock::new());
/// let secs = Duration::from_secs;
/// let work = with_lock(&registry, "invoice/7", "worker-1", secs(30), secs(5), |lease| async move {
///     // … write, passing lease.token() along …
///     lease.token()
/// });
/// let token = futures_lite::future::block_on(work)?.expect("the name was free");
/// assert_eq!(token, 1);
/// assert!(registry.holder("invoice/7").is_none(), "released afterwards");
/// # Ok::<(), alkstore_mem::LockError>(())
/// ```
pub async fn with_lock<S, F, Fut, T>(
    store: &S,
    name: &str,
    owner: &str,
    ttl: Duration,
    wait: Duration,
    body: F,
) -> Result<Option<T>, LockError>
where
    S: LockStore,
    F: FnOnce(LeaseInfo) -> Fut,
    Fut: Future<Output = T>,
{
    let Some(mut lock) = store.acquire(name, owner, ttl).timeout(wait).await? else {
        return Ok(None);
    };
    let outcome = {
        let mut work = pin!(body(lock.info()));
        let mut alive = pin!(lock.keep_alive(ttl / 3));
        poll_fn(|cx| {
            if let Poll::Ready(value) = work.as_mut().poll(cx) {
                return Poll::Ready(Ok(value));
            }
            match alive.as_mut().poll(cx) {
                Poll::Ready(lost) => Poll::Ready(Err(lost)),
                Poll::Pending => Poll::Pending,
            }
        })
        .await
    };
    match outcome {
        Ok(value) => {
            // A release that cannot reach its engine leaves the lease to lapse: not an error
            // worth losing the body's value over.
            let _ = lock.release().await;
            Ok(Some(value))
        }
        Err(lost) => Err(lost),
    }
}
