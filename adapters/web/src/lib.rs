//! [alkstore-mem](alkstore_mem) on browser time: named exclusive locks with TTL leases and
//! fencing tokens in a browser tab, a worker or any wasm module on `wasm32-unknown-unknown`.
//!
//! Two clocks, both `Clone` and cheap:
//! - [`PerformanceClock`] reads `performance.now()` from the global scope, so it works in
//!   windows and workers alike: sub-millisecond and monotonic. The one to use.
//! - [`DateClock`] reads `Date.now()`: wall-clock milliseconds since the Unix epoch. It can
//!   step backwards (NTP, the user changing the clock); the core clamps to the latest reading
//!   it has seen, so a lapsed lease stays lapsed, and leases do not age until time catches up.
//!
//! Both are [`Timer`]s too, sleeping on `setTimeout` ([`TimeoutSleep`], cleared when the
//! sleep is dropped), so [`LockRegistry::acquire`], [`Lock::keep_alive`] and [`with_lock`]
//! work without polling. [`WebLockRegistry`], [`WebLock`] and [`WebAcquire`] name the usual
//! types, and the core is re-exported, so this crate alone is enough to get started.
//!
//! # On other targets
//! The clocks and their sleeps exist on every target, so that rust-analyzer, `cargo check`
//! and native `cargo test` work on code written for the browser without `--target wasm32`.
//! Outside `wasm32` they are stand-ins on std time: `PerformanceClock` reads a monotonic
//! `Instant` since a process-wide origin, `DateClock` reads `SystemTime`, and sleeps are woken
//! by one shared timer thread, so no async runtime is needed. They are meant for host tooling
//! and tests; a native server should use `alkstore-mem-tokio`.
//!
//! # Example
//! ```
//! # fn main() -> Result<(), alkstore_mem_web::LockError> {
//! use alkstore_mem_web::{PerformanceClock, WebLockRegistry};
//! use core::time::Duration;
//!
//! let registry = WebLockRegistry::new(PerformanceClock::new());
//! if let Some(lock) = registry.try_lock("sync/outbox", "tab-1", Duration::from_secs(10))? {
//!     // … flush the outbox, passing lock.token() along with every write …
//!     assert!(registry.try_lock("sync/outbox", "tab-2", Duration::from_secs(10))?.is_none());
//!     lock.release();
//! }
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations)]

mod clocks;
mod millis;
mod sleep;

// The clocks' backend: the browser's on wasm32, std-based stand-ins elsewhere.
#[cfg(target_arch = "wasm32")]
#[path = "js.rs"]
mod sys;
#[cfg(not(target_arch = "wasm32"))]
#[path = "host.rs"]
mod sys;

// Everything of the core, so that this crate is the only lock crate a user needs: the
// registry, its handle and futures (`KeepAlive`, `Lapsed`), the contract, `with_lock` and
// `LockOptions`, `Fence`, the errors.
pub use alkstore_mem::*;
pub use clocks::{DateClock, PerformanceClock};
pub use millis::{millis_f64_until, timestamp_from_millis_f64};
pub use sleep::TimeoutSleep;

/// A [`LockRegistry`] on browser time ([`PerformanceClock`]).
pub type WebLockRegistry = LockRegistry<PerformanceClock>;

/// A [`Lock`] handle from a [`WebLockRegistry`].
pub type WebLock = Lock<PerformanceClock>;

/// The future of [`WebLockRegistry::acquire`]: waits for a lock, optionally bounded with
/// [`timeout`](Acquire::timeout).
pub type WebAcquire = Acquire<PerformanceClock>;

/// The future of [`WebLock::keep_alive`].
pub type WebKeepAlive<'a> = KeepAlive<'a, PerformanceClock>;

/// The future of [`WebLock::lapsed`].
pub type WebLapsed<'a> = Lapsed<'a, PerformanceClock>;

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
