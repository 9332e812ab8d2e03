//! [alkstore-mem](alkstore_mem) on tokio time: named exclusive locks with TTL leases and
//! fencing tokens for tokio servers.
//!
//! [`TokioClock`] reads [`tokio::time::Instant`], anchored when the clock is created, so
//! real time drives lease expiry in production and `#[tokio::test(start_paused = true)]` with
//! `tokio::time::advance` drives it exactly in tests. Everything else is the core, re-exported
//! here so that this crate alone is enough to get started.
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
//!     let waited = registry.acquire("nightly-report", "task-2", Duration::from_secs(30)).timeout(Duration::from_secs(1));
//!     let lock = waited.await?.expect("handed over within the second");
//!     let first = task.await.unwrap()?;
//!     assert!(lock.token() > first, "the new holder carries a larger fencing token");
//!     Ok(())
//! }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

mod clock;

pub use alkstore_mem::{
    Acquire, Clock, Config, InputProblem, LeaseInfo, Lock, LockError, LockRegistry, LockTable,
    ManualClock, ManualSleep, RESERVED_PREFIX, Timer, Timestamp,
};
pub use clock::TokioClock;

/// A [`LockRegistry`] on tokio time.
pub type TokioLockRegistry = LockRegistry<TokioClock>;

/// A [`Lock`] handle from a [`TokioLockRegistry`].
pub type TokioLock = Lock<TokioClock>;
