//! Helpers the contract bodies share: queueing a waiter, checking that a future is still
//! pending, and waiting for one that should resolve, all counted in store round trips
//! rather than in real time.
//!
//! A remote engine answers over the network and wakes waiters by pub/sub, so "the waiter is
//! queued" and "the hand-off arrived" take a few round trips there; in memory they are
//! exact at the first poll. The helpers therefore interleave polls of the future under test
//! with [`settle`]s (one [`LockStore::holder`] round trip and a yield), and give up with a
//! panic after [`PATIENCE`] of them (natively: and at least [`PATIENCE_TIME`] of real time,
//! so that a loaded machine, or a wake-up that a remote engine recovers by its periodic
//! re-check, does not fail a test that is right) instead of hanging.

use core::future::Future;
use core::pin::Pin;
use core::time::Duration;

use alkstore_mem::{AcquireFuture, LockStore, Timestamp};
use futures_lite::future::{poll_once, yield_now};

/// How many settles a future that should resolve gets before the test fails.
pub const PATIENCE: usize = 500;

/// Natively, how much real time a future that should resolve gets at the least, on top of
/// [`PATIENCE`] settles: a bound for a hang, never a timing assertion (a right answer comes
/// in a few round trips; this is only reached by a test that fails).
pub const PATIENCE_TIME: Duration = Duration::from_secs(30);

/// Counts the settles of one wait against [`PATIENCE`] (and natively [`PATIENCE_TIME`]).
struct Patience {
    rounds: usize,
    #[cfg(not(target_arch = "wasm32"))]
    start: std::time::Instant,
}

impl Patience {
    fn new() -> Self {
        Patience {
            rounds: 0,
            #[cfg(not(target_arch = "wasm32"))]
            start: std::time::Instant::now(),
        }
    }

    /// Whether the wait may go on for another settle.
    fn more(&mut self) -> bool {
        self.rounds += 1;
        #[cfg(not(target_arch = "wasm32"))]
        if self.start.elapsed() < PATIENCE_TIME {
            return true;
        }
        self.rounds <= PATIENCE
    }
}

/// How many settles a freshly started future gets to reach its engine (a waiter to be
/// queued, a keep-alive to start its sleep) before the test goes on.
pub const SETTLE_ROUNDS: usize = 3;

/// The name [`settle`] asks about: valid, not reserved, never locked by a body.
pub const SETTLE_NAME: &str = "conformance/settle";

/// A boxed, pinned future, so that the helpers can poll any engine's futures by `&mut`.
pub type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// One round trip to `store` and a yield: gives requests already sent, pub/sub wake-ups and
/// spawned tasks a chance to land before the next check.
pub async fn settle<S: LockStore>(store: &S) {
    store
        .holder(SETTLE_NAME)
        .await
        .expect("the store answers holder()");
    yield_now().await;
}

/// Starts `store.acquire(name, owner, ttl).timeout(wait)`, boxed, and drives it until it is
/// queued: it must stay pending through its first poll and [`SETTLE_ROUNDS`] settles.
/// Waiters started this way one after another are queued in that order.
pub async fn queue<S: LockStore>(
    store: &S,
    name: &str,
    owner: &str,
    ttl: Duration,
    wait: Duration,
) -> Pin<Box<S::Acquire>> {
    let mut waiter = Box::pin(store.acquire(name, owner, ttl).timeout(wait));
    drive_pending(
        store,
        &mut waiter,
        &format!("{owner:?} waiting for {name:?}"),
    )
    .await;
    waiter
}

/// Polls `fut` [`SETTLE_ROUNDS`] times with a settle between polls; panics if it resolves.
pub async fn drive_pending<S, F>(store: &S, fut: &mut F, what: &str)
where
    S: LockStore,
    F: Future + Unpin,
{
    for _ in 0..SETTLE_ROUNDS {
        assert!(
            poll_once(&mut *fut).await.is_none(),
            "{what}: resolved, but it should still be pending"
        );
        settle(store).await;
    }
    assert!(
        poll_once(&mut *fut).await.is_none(),
        "{what}: resolved, but it should still be pending"
    );
}

/// Polls `fut` until it resolves and returns its output; panics after [`PATIENCE`] settles.
pub async fn eventually<S, F>(store: &S, fut: &mut F, what: &str) -> F::Output
where
    S: LockStore,
    F: Future + Unpin,
{
    let mut patience = Patience::new();
    while patience.more() {
        if let Some(output) = poll_once(&mut *fut).await {
            return output;
        }
        settle(store).await;
    }
    panic!("{what}: still pending after {PATIENCE} round trips to the store");
}

/// Polls `fut` (a keep-alive, or work that keeps a lease alive) until the store reports a
/// deadline for `name` later than `after`, and returns it; panics if `fut` resolves, the
/// lease is gone, or [`PATIENCE`] settles pass first. Afterwards `fut` gets
/// [`SETTLE_ROUNDS`] more polls, to start its next sleep.
pub async fn renewed<S, F>(store: &S, fut: &mut F, name: &str, after: Timestamp) -> Timestamp
where
    S: LockStore,
    F: Future + Unpin,
    F::Output: core::fmt::Debug,
{
    let mut patience = Patience::new();
    while patience.more() {
        if let Some(output) = poll_once(&mut *fut).await {
            panic!("{name:?}: the keep-alive ended with {output:?}");
        }
        let lease = store
            .holder(name)
            .await
            .expect("the store answers holder()");
        let deadline = lease
            .unwrap_or_else(|| panic!("{name:?}: the kept-alive lease is gone"))
            .deadline();
        if deadline > after {
            drive_pending(store, fut, &format!("keep-alive on {name:?}")).await;
            return deadline;
        }
        settle(store).await;
    }
    panic!("{name:?}: not renewed past {after:?} after {PATIENCE} round trips to the store");
}

/// `ttl` in whole seconds, for readable bodies.
pub const fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}
