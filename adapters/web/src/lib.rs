//! [alkstore-mem](alkstore_mem) on browser time: named exclusive locks with TTL leases and
//! fencing tokens in a browser tab, a worker or any wasm module on `wasm32-unknown-unknown`.
//!
//! Two clocks, both `Clone` and cheap:
//! - `PerformanceClock` reads `performance.now()` from the global scope, so it works in
//!   windows and workers alike: sub-millisecond and monotonic. The one to use.
//! - `DateClock` reads `Date.now()`: wall-clock milliseconds since the Unix epoch. It can
//!   step backwards (NTP, the user changing the clock); the core clamps to the latest reading
//!   it has seen, so a lapsed lease stays lapsed, and leases do not age until time catches up.
//!
//! Both are [`Timer`]s too, sleeping on `setTimeout` (cleared when the sleep is dropped), so
//! [`LockRegistry::acquire`] waits for a lock without polling.
//!
//! The clocks exist on `wasm32` only; on native targets this crate offers the core re-exports
//! and [`timestamp_from_millis_f64`], so a workspace that includes it still builds and tests.
//!
//! # Example
//! ```
//! # #[cfg(target_arch = "wasm32")]
//! # fn main() -> Result<(), alkstore_mem_web::LockError> {
//! use alkstore_mem_web::{LockRegistry, PerformanceClock};
//! use core::time::Duration;
//!
//! let registry = LockRegistry::new(PerformanceClock::new());
//! if let Some(lock) = registry.try_lock("sync/outbox", "tab-1", Duration::from_secs(10))? {
//!     // … flush the outbox, passing lock.token() along with every write …
//!     lock.release();
//! }
//! # Ok(())
//! # }
//! # #[cfg(not(target_arch = "wasm32"))]
//! # fn main() {}
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

#[cfg(target_arch = "wasm32")]
mod clocks;
mod millis;
#[cfg(target_arch = "wasm32")]
mod sleep;

pub use alkstore_mem::{
    Acquire, Clock, Config, InputProblem, LeaseInfo, Lock, LockError, LockRegistry, LockTable,
    ManualClock, ManualSleep, RESERVED_PREFIX, Timer, Timestamp,
};
#[cfg(target_arch = "wasm32")]
pub use clocks::{DateClock, PerformanceClock};
pub use millis::{millis_f64_until, timestamp_from_millis_f64};
#[cfg(target_arch = "wasm32")]
pub use sleep::TimeoutSleep;
