//! Named exclusive locks with TTL leases and fencing tokens, for browsers, wasm modules and
//! tokio servers alike.
//!
//! # The model
//! A [`LockRegistry`] holds named exclusive locks in memory. [`try_lock`](LockRegistry::try_lock)
//! either grants a [`Lock`] on a name for a time-to-live, or answers `None` because the name is
//! busy; a busy lock is a value, never an error. A lease is live while `now < deadline`: the
//! holder may [`renew`](Lock::renew) it (an absolute reset to `now + ttl`, refused once the lease
//! has lapsed) or [`release`](Lock::release) it, and dropping the handle releases it too. Nothing
//! runs in the background: expiry is a clock check at each operation, so a lease that lapses is
//! simply free for the next caller. Every grant carries a fencing token larger than all before
//! it, so whatever the lock protects can refuse a stale holder's late writes. The core never
//! reads a system clock: it is a pure state machine ([`LockTable`], every method takes `now`)
//! wrapped by a registry that reads an injected [`Clock`] once per operation. `ManualClock`
//! drives it in tests; the `alkstore-mem-tokio` and `alkstore-mem-web` adapters bind tokio's
//! and the browser's time.
//!
//! The crate is `#![no_std]` and needs only `alloc`.
//!
//! # Features
//! - `std` (default): the shards lock a parking `std::sync::Mutex` instead of a spin lock;
//!   build with `default-features = false` where there is no std (such as `wasm32v1-none`).
//! - `serde`: `Serialize`/`Deserialize` on [`LeaseInfo`] (`{name, owner, token, deadline}`),
//!   [`Snapshot`], [`Waiting`], [`Timestamp`] (nanoseconds), [`LockError`] and its parts,
//!   and [`StaleToken`]; `no_std` too.
//! - `tracing`: events (target `alkstore`) on grants (direct and handed off), refused
//!   renewals, leases a holder finds lost, and force-releases, with the name, owner, token
//!   and deadline as fields; emitted after the shard's lock is released, never under it.
//!
//! # Example
//! ```
//! use alkstore_mem::{LockRegistry, ManualClock};
//! use core::time::Duration;
//!
//! let clock = ManualClock::new();
//! let registry = LockRegistry::new(clock.clone());
//!
//! // worker-a takes the job for 5 seconds.
//! let lock_a = registry.try_lock("job/17", "worker-a", Duration::from_secs(5))?.unwrap();
//! assert!(registry.try_lock("job/17", "worker-b", Duration::from_secs(5))?.is_none());
//!
//! // worker-a stalls past its lease; worker-b takes over with a larger fencing token.
//! clock.advance(Duration::from_secs(5));
//! let lock_b = registry.try_lock("job/17", "worker-b", Duration::from_secs(5))?.unwrap();
//! assert!(lock_b.token() > lock_a.token());
//!
//! // worker-a's handle can tell that it lost the lease; releasing it is harmless.
//! assert!(!lock_a.is_held());
//! assert!(!lock_a.release());
//! assert_eq!(registry.holder("job/17").unwrap().owner(), "worker-b");
//! # Ok::<(), alkstore_mem::LockError>(())
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations)]

extern crate alloc;
#[cfg(any(test, feature = "std"))]
extern crate std;

mod acquire;
mod boxed;
mod config;
pub mod contract;
mod deferred;
mod error;
pub mod events;
mod fence;
mod lapsed;
mod lease;
mod manual_clock;
mod memory_store;
mod padded;
mod pending;
mod readable;
mod registry;
#[cfg(feature = "serde")]
mod serde_data;
mod snapshot;
mod state;
mod sync;
mod table;
mod time;
mod timer;
mod trace;
pub mod validate;
mod wake;
mod with_lock;

pub use acquire::Acquire;
pub use boxed::BoxedFuture;
pub use config::Config;
pub use contract::{AcquireFuture, LockHandle, LockStore, MaybeSend, MaybeSync};
pub use error::{InputProblem, LockError, TtlProblem};
pub use fence::{Fence, StaleToken};
pub use lapsed::{KeepAlive, Lapsed};
pub use lease::LeaseInfo;
pub use manual_clock::{ManualClock, ManualSleep};
pub use registry::{Lock, LockRegistry};
pub use snapshot::{Snapshot, Waiting};
pub use table::LockTable;
pub use time::{Clock, Timestamp};
pub use timer::Timer;
pub use validate::RESERVED_PREFIX;
pub use with_lock::{LockOptions, with_lock};
