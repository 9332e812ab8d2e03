//! [alkstore-mem](alkstore_mem) on tokio time: named exclusive locks with TTL leases and
//! fencing tokens for tokio servers.
//!
//! [`TokioClock`] reads [`tokio::time::Instant`], anchored when the clock is created, so
//! real time drives lease expiry in production and `#[tokio::test(start_paused = true)]` with
//! `tokio::time::advance` drives it exactly in tests. Everything else is the core, re-exported
//! here so that this crate alone is enough to get started: the registry and its handles, the
//! shared contract ([`LockStore`], [`LockHandle`], [`AcquireFuture`]) that the Redis engine
//! (`alkstore-redis`) implements too, [`with_lock`], and [`Snapshot`]. The aliases
//! [`TokioLockRegistry`], [`TokioLock`] and [`TokioAcquire`] spell the tokio types without
//! generics; a struct holding a [`TokioLock`] repeats no bounds, and every future here is
//! `Send`, so `tokio::spawn` takes it.
//!
//! # Example
//! ```
//! use alkstore_mem_tokio::{LockError, LockRegistry, TokioClock};
//! use std::time::Duration;
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> Result<(), LockError> {
//!     let registry = LockRegistry::new(TokioClock::new());
//!
//!     // A task takes the nightly report for 30 s, works, and releases it by dropping it.
//!     let worker = registry.clone();
//!     let task = tokio::spawn(async move {
//!         let lock = worker.try_lock("nightly-report", "task-1", Duration::from_secs(30))?;
//!         let lock = lock.expect("the name was free");
//!         tokio::time::sleep(Duration::from_millis(20)).await; // the work
//!         Ok::<_, LockError>(lock.token())
//!     });
//!
//!     // Meanwhile another caller waits up to 1 s for the same name, without polling:
//!     // it is handed the lease the moment the task's handle is dropped.
//!     tokio::time::sleep(Duration::from_millis(5)).await;
//!     let waited = registry
//!         .acquire("nightly-report", "task-2", Duration::from_secs(30))
//!         .timeout(Duration::from_secs(1));
//!     let lock = waited.await?.expect("handed over within the second");
//!     let first = task.await.unwrap()?;
//!     assert!(lock.token() > first, "the new holder carries a larger fencing token");
//!     Ok(())
//! }
//! ```
//!
//! # Keeping a lease alive
//! A job longer than its lease races [`Lock::keep_alive`] against its work: the work stops
//! when the lease is lost. [`with_lock`] does the same for a closure, on any [`LockStore`].
//! ```
//! use alkstore_mem_tokio::{LockError, LockOptions, LockRegistry, TokioClock, with_lock};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), LockError> {
//! let registry = LockRegistry::new(TokioClock::new());
//! let ttl = Duration::from_secs(3);
//!
//! // By hand: a 10 s job on a 3 s lease, renewed every second.
//! let lock = registry.try_lock("reindex", "host-1", ttl)?.expect("free");
//! tokio::select! {
//!     lost = lock.keep_alive(Duration::from_secs(1)) => return Err(lost),
//!     () = tokio::time::sleep(Duration::from_secs(10)) => {} // the work
//! }
//! assert!(lock.release(), "still held after 10 s");
//!
//! // With a closure: wait up to 5 s, keep alive while the body runs, release after.
//! let options = LockOptions::ttl(ttl).wait(Duration::from_secs(5)).keep_alive(Duration::ZERO);
//! let job = with_lock(&registry, "reindex", "host-2", options, |lease| async move {
//!     tokio::time::sleep(Duration::from_secs(10)).await; // the work
//!     lease.token()
//! });
//! let token = job.await?.expect("the name was free");
//! assert_eq!(token, 2);
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations)]

mod clock;

// Everything of the core, so that this crate is the only lock crate a user needs: the
// registry, its handle and futures (`KeepAlive`, `Lapsed`), the contract, `with_lock` and
// `LockOptions`, `Fence`, the errors.
pub use alkstore_mem::*;
pub use clock::TokioClock;

/// A [`LockRegistry`] on tokio time.
pub type TokioLockRegistry = LockRegistry<TokioClock>;

/// A [`Lock`] handle from a [`TokioLockRegistry`].
pub type TokioLock = Lock<TokioClock>;

/// The future of [`TokioLockRegistry::acquire`]: `Send + 'static`, so `tokio::spawn` takes it.
pub type TokioAcquire = Acquire<TokioClock>;

/// The future of [`TokioLock::keep_alive`].
pub type TokioKeepAlive<'a> = KeepAlive<'a, TokioClock>;

/// The future of [`TokioLock::lapsed`].
pub type TokioLapsed<'a> = Lapsed<'a, TokioClock>;
