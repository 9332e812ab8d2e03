//! The contract every engine implements: [`LockStore`] hands out [`LockHandle`]s.
//!
//! One shape for every engine. The in-memory [`LockRegistry`](crate::LockRegistry)
//! implements it (its futures are ready at once, so the trait costs it nothing), and so does
//! the Redis engine (`alkstore-redis`), whose futures do a round trip. Code written against
//! these traits, and tested against the in-memory engine with a
//! [`ManualClock`](crate::ManualClock), runs unchanged on Redis.
//!
//! # What every engine promises
//! - **Exclusion.** At most one live lease per name. A lease is live while `now < deadline`
//!   on the engine's own clock (the registry's clock, or the Redis server's time).
//! - **Busy is a value.** [`try_lock`](LockStore::try_lock) answers `Ok(None)` when the name
//!   is held; errors are for bad input, a full table, a renew that came too late, and an
//!   engine that cannot be reached ([`LockError::Unavailable`]).
//! - **Validation first.** Names, owners and durations are checked by the same rules
//!   everywhere, before anything changes; a refused call changes nothing.
//! - **Renew is an absolute reset** to `now + ttl`, refused with [`LockError::Expired`] at or
//!   after the deadline; **release** compares the fencing token and never frees a newer lease.
//! - **Fencing tokens strictly increase** across everything one store grants.
//! - **Waiting is FIFO with hand-off**: [`acquire`](LockStore::acquire) queues behind earlier
//!   waiters, a release hands the lease straight to the head waiter, nobody barges; dropping
//!   a waiting future withdraws it and passes on a lease already handed to it.
//! - **Keeping and watching a lease**: [`keep_alive`](LockHandle::keep_alive) renews it at
//!   least every half ttl (see [`keep_alive_interval`]) and never runs past its deadline;
//!   [`lapsed`](LockHandle::lapsed) says when and how it ended. Both take `&self`, so the
//!   work they guard can read the handle meanwhile.
//! - **The operator's view**: [`snapshot`](LockStore::snapshot) lists held leases and queued
//!   waiters; [`force_release`](LockStore::force_release) breaks a stuck lease.
//! - **Every future is a named type**: each engine names the futures it hands out (the
//!   in-memory [`Acquire`](crate::Acquire), [`KeepAlive`](crate::KeepAlive) and
//!   [`Lapsed`](crate::Lapsed); a remote engine's through [`BoxedFuture`](crate::BoxedFuture)),
//!   and generic code names them as `S::Acquire`, `L::KeepAlive<'a>` and `L::Lapsed<'a>`.
//!   A remote engine's `acquire` future wraps a [`PendingAcquire`], which holds the
//!   request until the first poll (the wait counts from there).
//!
//! # Example: code generic over the engine
//! ```
//! use alkstore_mem::{AcquireFuture, LockError, LockHandle, LockRegistry, LockStore, ManualClock};
//! use core::time::Duration;
//!
//! /// Runs the nightly report if nobody else is, on whatever engine `store` is.
//! async fn nightly<S: LockStore>(store: &S) -> Result<Option<u64>, LockError> {
//!     let Some(lock) = store.try_lock("nightly", "host-1", Duration::from_secs(60)).await? else {
//!         return Ok(None); // someone else is on it
//!     };
//!     let token = lock.token();
//!     lock.release().await?;
//!     Ok(Some(token))
//! }
//!
//! let registry = LockRegistry::new(ManualClock::new());
//! let token = futures_lite::future::block_on(nightly(&registry))?;
//! assert_eq!(token, Some(1));
//! # Ok::<(), LockError>(())
//! ```

use core::future::Future;
use core::time::Duration;

use crate::error::LockError;
use crate::lease::LeaseInfo;
use crate::snapshot::Snapshot;
use crate::time::Timestamp;

pub use crate::pending::{AcquireRequest, PendingAcquire};

/// `Send` where threads exist, nothing on `wasm32`.
///
/// The contract's futures and handles are `MaybeSend`: on native targets that means `Send`,
/// so `tokio::spawn` takes them; on `wasm32` (single-threaded, where browser clocks hold
/// JavaScript values that are not `Send`) it asks nothing, so the browser engine implements
/// the same traits. Implemented for every type that qualifies; never implement it yourself.
#[cfg(not(target_arch = "wasm32"))]
pub trait MaybeSend: Send {}
#[cfg(not(target_arch = "wasm32"))]
impl<T: Send + ?Sized> MaybeSend for T {}

/// `Send` where threads exist, nothing on `wasm32`.
///
/// The contract's futures and handles are `MaybeSend`: on native targets that means `Send`,
/// so `tokio::spawn` takes them; on `wasm32` (single-threaded, where browser clocks hold
/// JavaScript values that are not `Send`) it asks nothing, so the browser engine implements
/// the same traits. Implemented for every type that qualifies; never implement it yourself.
#[cfg(target_arch = "wasm32")]
pub trait MaybeSend {}
#[cfg(target_arch = "wasm32")]
impl<T: ?Sized> MaybeSend for T {}

/// `Sync` where threads exist, nothing on `wasm32`: the companion of [`MaybeSend`].
#[cfg(not(target_arch = "wasm32"))]
pub trait MaybeSync: Sync {}
#[cfg(not(target_arch = "wasm32"))]
impl<T: Sync + ?Sized> MaybeSync for T {}

/// `Sync` where threads exist, nothing on `wasm32`: the companion of [`MaybeSend`].
#[cfg(target_arch = "wasm32")]
pub trait MaybeSync {}
#[cfg(target_arch = "wasm32")]
impl<T: ?Sized> MaybeSync for T {}

/// A store of named exclusive locks with TTL leases: the contract every engine implements.
///
/// See the [module docs](crate::contract) for the rules. The in-memory
/// [`LockRegistry`](crate::LockRegistry) implements it with futures that are ready at once;
/// it also has the same methods inherently, synchronous, for code that does not need to be
/// generic.
///
/// # Example
/// ```
/// use alkstore_mem::{LockHandle, LockRegistry, LockStore, ManualClock};
/// use core::time::Duration;
///
/// async fn demo<S: LockStore>(store: &S) {
///     let lock = store.try_lock("job", "a", Duration::from_secs(5)).await.unwrap().unwrap();
///     assert!(store.try_lock("job", "b", Duration::from_secs(5)).await.unwrap().is_none());
///     assert_eq!(store.holder("job").await.unwrap().unwrap().token(), lock.token());
///     assert!(lock.release().await.unwrap());
/// }
/// futures_lite::future::block_on(demo(&LockRegistry::new(ManualClock::new())));
/// ```
pub trait LockStore: MaybeSend + MaybeSync {
    /// The handle of a held lease.
    type Lock: LockHandle;
    /// The future of [`acquire`](Self::acquire).
    type Acquire: AcquireFuture<Self::Lock>;

    /// Takes the lock `name` for `owner` until `ttl` from now, if it is free.
    ///
    /// Resolves to `Ok(Some(lock))` when granted, with a fencing token larger than any this
    /// store granted before; `Ok(None)` when a live lease holds the name (the same owner's
    /// included: locks are not reentrant) or waiters are queued for it.
    ///
    /// # Errors
    /// [`LockError::InvalidName`], [`LockError::ReservedName`], [`LockError::InvalidOwner`],
    /// [`LockError::InvalidTtl`] before anything changes; [`LockError::CapacityExceeded`]
    /// when the store is full; [`LockError::Unavailable`] when a remote engine cannot answer.
    fn try_lock(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
    ) -> impl Future<Output = Result<Option<Self::Lock>, LockError>> + MaybeSend;

    /// Waits for the lock `name`, then holds it for `ttl`. Waits without limit unless bounded
    /// with [`AcquireFuture::timeout`]; then it resolves to `Ok(None)` when the wait elapses.
    ///
    /// Waiters on a name are served in arrival order with direct hand-off; dropping the
    /// future withdraws the request (and passes on a lease already handed to it). Errors are
    /// those of [`try_lock`](Self::try_lock), without waiting.
    fn acquire(&self, name: &str, owner: &str, ttl: Duration) -> Self::Acquire;

    /// The live lease on `name`: `Ok(None)` when the name is free, its lease lapsed, or
    /// `name` is not a valid lock name (no lease can have it).
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when a remote engine cannot answer; never for the
    /// in-memory engine.
    fn holder(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<LeaseInfo>, LockError>> + MaybeSend;

    /// The held leases and the queued waiters of every name, for operators and admin pages:
    /// leases sorted by name, waiters by name and then in the order they will be served.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when a remote engine cannot answer; never for the
    /// in-memory engine.
    fn snapshot(&self) -> impl Future<Output = Result<Snapshot, LockError>> + MaybeSend;

    /// Frees `name` whoever holds it, as an operator frees a stuck lock, and resolves to the
    /// lease it ended: `Ok(None)` when the name had no live lease (or is not a valid name).
    ///
    /// The old holder's renewals (and so its `keep_alive`) end with [`LockError::Expired`],
    /// its `release` answers `false` and touches nothing; the lease goes to the head waiter,
    /// if any, with a larger token.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when a remote engine cannot answer; never for the
    /// in-memory engine.
    fn force_release(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<LeaseInfo>, LockError>> + MaybeSend;
}

/// The future of [`LockStore::acquire`]: resolves to the lock, and can bound its wait.
pub trait AcquireFuture<L>: Future<Output = Result<Option<L>, LockError>> + MaybeSend {
    /// Bounds the wait: the future resolves to `Ok(None)` once `wait` has elapsed without a
    /// grant. `timeout(Duration::ZERO)` answers exactly as `try_lock` does. Call it before
    /// the first poll; the wait counts from the first poll.
    #[must_use = "timeout returns the bounded future"]
    fn timeout(self, wait: Duration) -> Self
    where
        Self: Sized;
}

/// A held lease, as every engine hands it out.
///
/// Dropping a handle releases its lease (the in-memory engine at once; a remote engine as
/// soon as it can, or the lease lapses at its deadline); [`detach`](Self::detach) lets the
/// lease run to its deadline instead.
pub trait LockHandle: MaybeSend + MaybeSync + Sized {
    /// The future of [`keep_alive`](Self::keep_alive).
    type KeepAlive<'a>: Future<Output = LockError> + MaybeSend
    where
        Self: 'a;

    /// The future of [`lapsed`](Self::lapsed).
    type Lapsed<'a>: Future<Output = LockError> + MaybeSend
    where
        Self: 'a;

    /// The lock's name.
    fn name(&self) -> &str;

    /// The owner the lease was granted to.
    fn owner(&self) -> &str;

    /// The fencing token: larger than every token granted before it by the same store, and
    /// kept by renewals.
    fn token(&self) -> u64;

    /// The deadline as of the last grant or renew (a renewal by
    /// [`keep_alive`](Self::keep_alive) included), on the engine's clock: the lease is live
    /// while `now < deadline`.
    fn deadline(&self) -> Timestamp;

    /// The ttl of the last grant or renew: what [`keep_alive`](Self::keep_alive) renews to.
    fn ttl(&self) -> Duration;

    /// This grant as a [`LeaseInfo`] (name, owner, token, and the deadline as of the last
    /// grant or renew).
    fn info(&self) -> LeaseInfo;

    /// Whether the lease is still live now.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when a remote engine cannot answer.
    fn is_held(&self) -> impl Future<Output = Result<bool, LockError>> + MaybeSend;

    /// Resets the deadline to `now + ttl` and keeps the token.
    ///
    /// # Errors
    /// [`LockError::InvalidTtl`] for a zero `ttl`; [`LockError::Expired`] at or after the
    /// deadline (the lease stays lapsed); [`LockError::Unavailable`] when a remote engine
    /// cannot answer (the lease may then lapse at its deadline).
    fn renew(&mut self, ttl: Duration) -> impl Future<Output = Result<(), LockError>> + MaybeSend;

    /// Releases the lease: `Ok(true)` when it was live and is now free (or handed to the
    /// head waiter), `Ok(false)` when it had lapsed. Never frees a newer lease.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when a remote engine cannot answer (the lease then lapses
    /// at its deadline).
    fn release(self) -> impl Future<Output = Result<bool, LockError>> + MaybeSend;

    /// Gives up the handle without releasing: the lease stays until its deadline.
    fn detach(self);

    /// Renews the lease to its [`ttl`](Self::ttl) every `every`, and returns only when a
    /// renewal fails, with that error: [`LockError::Expired`] once the lease is lost.
    /// `select!` it against the work, so that the work stops when the lease is gone; it
    /// takes `&self`, so the work can read [`token`](Self::token),
    /// [`deadline`](Self::deadline) or [`is_held`](Self::is_held) meanwhile.
    ///
    /// The interval is [`keep_alive_interval`]`(every, ttl)`: a zero `every` means a third
    /// of the ttl, and anything above half the ttl is clamped to half, so that a typo cannot
    /// turn keep-alive off. It never runs past the lease's deadline: a renewal that cannot
    /// be made (or, on a remote engine, answered) before it ends the future with `Expired`.
    ///
    /// On a remote engine a renewal may take up to the engine's `io_timeout`: a ttl below
    /// twice that is refused at once with [`LockError::InvalidTtl`]
    /// ([`TtlProblem::TooShortToKeepAlive`](crate::TtlProblem::TooShortToKeepAlive)).
    fn keep_alive(&self, every: Duration) -> Self::KeepAlive<'_>;

    /// Resolves once the lease is no longer held, with how it ended
    /// ([`LockError::Expired`]: lapsed, released elsewhere or force-released). It sleeps to
    /// the deadline and checks again, so renewals push it out. A remote engine that cannot
    /// be reached counts the lease as lost at its deadline (by its local estimate of the
    /// server's clock, which errs early).
    fn lapsed(&self) -> Self::Lapsed<'_>;
}

/// How often [`keep_alive`](LockHandle::keep_alive) renews a lease of `ttl` when asked to
/// renew every `every`: a zero `every` means a third of the ttl; anything above half the ttl
/// is clamped to half, so that every renewal has at least half a ttl to land in; never less
/// than a nanosecond. Every engine uses it, recomputed from the current ttl at each renewal.
///
/// # Example
/// ```
/// use alkstore_mem::contract::keep_alive_interval;
/// use core::time::Duration;
///
/// let ms = Duration::from_millis;
/// assert_eq!(keep_alive_interval(ms(100), ms(900)), ms(100)); // as asked
/// assert_eq!(keep_alive_interval(Duration::ZERO, ms(900)), ms(300)); // a third
/// assert_eq!(keep_alive_interval(ms(500), ms(100)), ms(50)); // a typo, clamped to half
/// ```
pub fn keep_alive_interval(every: Duration, ttl: Duration) -> Duration {
    let every = if every.is_zero() {
        ttl / 3
    } else {
        every.min(ttl / 2)
    };
    every.max(Duration::from_nanos(1))
}

/// When [`keep_alive`](LockHandle::keep_alive) renews a lease whose deadline is `deadline`
/// and whose ttl is `ttl`, renewing every `every`: once only `ttl - interval` is left
/// ([`keep_alive_interval`]), that is `interval` after the last grant or renewal. It counts
/// from the deadline, not from when `keep_alive` started, so a keep-alive started late on a
/// lease with little left renews at once instead of after a whole interval; it is always
/// before the deadline (by at least half the ttl). A deadline of [`Timestamp::MAX`] never
/// comes, and is never due for renewal.
///
/// # Example
/// ```
/// use alkstore_mem::Timestamp;
/// use alkstore_mem::contract::next_renewal;
/// use core::time::Duration;
///
/// let secs = Duration::from_secs;
/// // Granted at 0 s for 10 s, renewed every 5 s: due at 5 s.
/// let deadline = Timestamp::from_millis(10_000);
/// assert_eq!(next_renewal(deadline, secs(10), secs(5)), Timestamp::from_millis(5_000));
/// // Started at 6 s, with 4 s left: due already (5 s), so it renews at once.
/// assert!(next_renewal(deadline, secs(10), secs(5)) <= Timestamp::from_millis(6_000));
/// ```
pub fn next_renewal(deadline: Timestamp, ttl: Duration, every: Duration) -> Timestamp {
    if deadline == Timestamp::MAX {
        return Timestamp::MAX;
    }
    let interval = keep_alive_interval(every, ttl);
    deadline.saturating_sub(ttl.saturating_sub(interval))
}
