//! [`with_lock`] and its [`LockOptions`]: acquire, run, keep alive, release, on any engine.

use core::future::{Future, poll_fn};
use core::pin::pin;
use core::task::Poll;
use core::time::Duration;

use crate::contract::{AcquireFuture, LockHandle, LockStore};
use crate::error::LockError;
use crate::lease::LeaseInfo;

/// How [`with_lock`] holds its lock: the lease's ttl, how long to wait for it, and whether
/// to keep it alive while the body runs. Each duration is set by a method that names it, so
/// a ttl and a wait cannot be swapped by accident.
///
/// [`LockOptions::ttl`] is the only required setting; by default `with_lock` waits without
/// limit (as [`acquire`](LockStore::acquire) does) and does not renew the lease, so the body
/// must finish within the ttl or it is stopped.
///
/// # Example
/// ```
/// use alkstore_mem::LockOptions;
/// use core::time::Duration;
///
/// let secs = Duration::from_secs;
/// let options = LockOptions::ttl(secs(30)).wait(secs(5)).keep_alive(secs(10));
/// assert_eq!(options.get_ttl(), secs(30));
/// assert_eq!(options.get_wait(), Some(secs(5)));
/// assert_eq!(options.get_keep_alive(), Some(secs(10)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "LockOptions is a builder: pass it to with_lock"]
pub struct LockOptions {
    ttl: Duration,
    wait: Option<Duration>,
    keep_alive: Option<Duration>,
}

impl LockOptions {
    /// Hold the lock for `ttl` from the grant (and from each renewal), waiting for it without
    /// limit and without keep-alive. A zero `ttl` is refused by `with_lock` with
    /// [`LockError::InvalidTtl`], as by every engine.
    pub const fn ttl(ttl: Duration) -> Self {
        LockOptions {
            ttl,
            wait: None,
            keep_alive: None,
        }
    }

    /// Wait at most `wait` for the lock; `with_lock` resolves to `Ok(None)` (the body never
    /// runs) when it elapses first. `Duration::ZERO` tries once, as `try_lock` does.
    pub const fn wait(mut self, wait: Duration) -> Self {
        self.wait = Some(wait);
        self
    }

    /// Keep the lease alive while the body runs, renewing it every `every` (zero: a third of
    /// the ttl; above half the ttl: half, see
    /// [`keep_alive_interval`](crate::contract::keep_alive_interval)).
    pub const fn keep_alive(mut self, every: Duration) -> Self {
        self.keep_alive = Some(every);
        self
    }

    /// The lease's ttl.
    pub const fn get_ttl(&self) -> Duration {
        self.ttl
    }

    /// The bound on the wait, if any (`None`: without limit).
    pub const fn get_wait(&self) -> Option<Duration> {
        self.wait
    }

    /// The keep-alive interval as asked, if the lease is kept alive.
    pub const fn get_keep_alive(&self) -> Option<Duration> {
        self.keep_alive
    }
}

/// Runs `body` while holding the lock `name`: waits for it (up to
/// [`LockOptions::wait`]), runs the body, keeps the lease alive meanwhile if
/// [`LockOptions::keep_alive`] asks, and releases it after.
///
/// Resolves to `Ok(Some(value))` with the body's output, or `Ok(None)` when a bounded wait
/// elapsed without a grant (the body never ran). The body gets the lease's [`LeaseInfo`]:
/// pass its [`token`](LeaseInfo::token) to whatever the lock protects (a
/// [`Fence`](crate::Fence) there refuses stale writes).
///
/// The body never runs on a lease that is gone: it is raced against the lease, and when the
/// lease is lost (it lapsed without keep-alive, a renewal failed, or it was force-released)
/// the body is dropped at its next `.await` and the error is returned
/// ([`LockError::Expired`] for a lost lease). A body that runs on past the deadline without
/// yielding cannot be stopped, but its value is not returned as if it ran under the lock:
/// once the body ends, the lease is checked, and a lease lost meanwhile is the error. (A
/// remote engine that cannot answer that check gives [`LockError::Unavailable`].) A failed
/// release after that is not an error: the lease lapses at its deadline.
///
/// On a remote engine a renewal takes a round trip: keep-alive there needs a ttl of at least
/// twice the engine's `io_timeout` (else the body never starts, the lease is released, and
/// the error is [`LockError::InvalidTtl`]).
///
/// # Errors
/// The errors of [`LockStore::acquire`] (bad input, a full store, an unreachable engine),
/// and how the lease was lost when it was.
///
/// # Example
/// ```
/// use alkstore_mem::{LockOptions, LockRegistry, ManualClock, with_lock};
/// use core::time::Duration;
///
/// let registry = LockRegistry::new(ManualClock::new());
/// let secs = Duration::from_secs;
/// let options = LockOptions::ttl(secs(30)).wait(secs(5)).keep_alive(secs(10));
/// let work = with_lock(&registry, "invoice/7", "worker-1", options, |lease| async move {
///     // … write, passing lease.token() along …
///     lease.token()
/// });
/// let token = futures_lite::future::block_on(work)?.expect("the name was free");
/// assert_eq!(token, 1);
/// assert!(registry.holder("invoice/7").is_none(), "released afterwards");
/// # Ok::<(), alkstore_mem::LockError>(())
/// ```
///
/// Two durations in a row, which 0.2 took and which could be swapped unnoticed, no longer
/// compile:
/// ```compile_fail
/// use alkstore_mem::{LockRegistry, ManualClock, with_lock};
/// use core::time::Duration;
///
/// let registry = LockRegistry::new(ManualClock::new());
/// let (wait, ttl) = (Duration::from_secs(5), Duration::from_secs(30));
/// let _ = with_lock(&registry, "invoice/7", "worker-1", wait, ttl, |_| async {});
/// ```
pub async fn with_lock<S, F, Fut, T>(
    store: &S,
    name: &str,
    owner: &str,
    options: LockOptions,
    body: F,
) -> Result<Option<T>, LockError>
where
    S: LockStore,
    F: FnOnce(LeaseInfo) -> Fut,
    Fut: Future<Output = T>,
{
    let acquire = store.acquire(name, owner, options.ttl);
    let granted = match options.wait {
        Some(wait) => acquire.timeout(wait).await?,
        None => acquire.await?,
    };
    let Some(lock) = granted else {
        return Ok(None);
    };
    let info = lock.info();
    let outcome = match options.keep_alive {
        Some(every) => guarded(lock.keep_alive(every), || body(info)).await,
        None => guarded(lock.lapsed(), || body(info)).await,
    };
    let outcome = match outcome {
        // The body may have finished after the lease lapsed, if it ran on without yielding
        // past the deadline: only a lease still held now was held all along (a lapsed lease
        // is never revived), so it is asked, and a lost one is an error, not a value.
        Ok(value) => match lock.is_held().await {
            Ok(true) => Ok(Some(value)),
            Ok(false) => Err(lock.lapsed().await),
            Err(unknown) => Err(unknown),
        },
        Err(lost) => Err(lost),
    };
    // Lost, refused or done: release whatever is left of it (nothing, for a lost lease). A
    // release that cannot reach its engine leaves the lease to lapse at its deadline.
    let _ = lock.release().await;
    outcome
}

/// Runs the work that `start` makes while `guard` (a keep-alive, or `lapsed`) says the lease
/// is held: the work's value, or the guard's error once it ends (the work is then dropped).
/// The guard is polled first, and the work is made only once the guard is pending, so a
/// refused keep-alive never starts the body and a lease lost in the same turn as the body
/// finishes counts as lost.
async fn guarded<T, W: Future<Output = T>>(
    guard: impl Future<Output = LockError>,
    start: impl FnOnce() -> W,
) -> Result<T, LockError> {
    let mut guard = pin!(guard);
    let mut start = Some(start);
    let mut work = pin!(None::<W>);
    poll_fn(|cx| {
        if let Poll::Ready(lost) = guard.as_mut().poll(cx) {
            return Poll::Ready(Err(lost));
        }
        if let Some(start) = start.take() {
            work.set(Some(start()));
        }
        match work.as_mut().as_pin_mut().map(|work| work.poll(cx)) {
            Some(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            _ => Poll::Pending,
        }
    })
    .await
}
