//! alkstore-idb for JavaScript: the wasm-bindgen bundle that the harness's Node drivers load
//! in several pages and dedicated workers of one origin (`test.mjs`: cross-context tests and
//! faults; `scenarios.mjs`: clock steps, dropped futures, hostile rows and messages;
//! `bench.mjs`; the demo page). Browser only; natively this crate is empty.
//!
//! - `Locks`: `IdbLocks` (`Locks.open`, `tryLock`, `acquire` (a promise) and
//!   `acquirePending` (a `Pending` that can be dropped at any moment), `holder`, `snapshot`,
//!   `forceRelease`, `withLock`, and futures dropped on purpose: `tryLockDropped`).
//! - `Lock`: a held lease (`token`, `deadline`, `info()`, `release`, `renew`,
//!   `renewDropped`, `isHeld`, `keepAlive` and `lapsed` as a stoppable `Watch`, `detach`,
//!   `dropHandle`).
//! - `Fence`: the store side of fencing (a `Fence` of the core) for the protected "ledger"
//!   of the fault tests and the demo.
//! - `benchCycles`: try_lock + release cycles timed in Rust, for the benchmark.
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations)]

#[cfg(target_arch = "wasm32")]
mod bench;
#[cfg(target_arch = "wasm32")]
mod js;
#[cfg(target_arch = "wasm32")]
mod lock;
#[cfg(target_arch = "wasm32")]
mod locks;
#[cfg(target_arch = "wasm32")]
mod pending;

#[cfg(target_arch = "wasm32")]
pub use bench::bench_cycles;
#[cfg(target_arch = "wasm32")]
pub use js::Fence;
#[cfg(target_arch = "wasm32")]
pub use lock::{Lock, Watch};
#[cfg(target_arch = "wasm32")]
pub use locks::Locks;
#[cfg(target_arch = "wasm32")]
pub use pending::Pending;
