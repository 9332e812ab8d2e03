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
//! use alkstore_mem_tokio::{LockRegistry, TokioClock};
//! use std::time::Duration;
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> Result<(), alkstore_mem_tokio::LockError> {
//!     let registry = LockRegistry::new(TokioClock::new());
//!     let worker = registry.clone();
//!     let task = tokio::spawn(async move {
//!         let lock = worker.try_lock("nightly-report", "task-1", Duration::from_secs(30))?;
//!         Ok::<_, alkstore_mem_tokio::LockError>(lock.map(|lock| lock.token()))
//!     });
//!     let token = task.await.unwrap()?.expect("the name was free");
//!     // The task's handle was dropped when it finished, which released the lock.
//!     assert!(registry.holder("nightly-report").is_none());
//!     assert_eq!(token, 1);
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
