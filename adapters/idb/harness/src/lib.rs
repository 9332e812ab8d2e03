//! alkstore-idb for JavaScript: the wasm-bindgen bundle that `harness/run.mjs` loads in
//! several pages and dedicated workers of one origin (cross-context tests, faults, the
//! benchmark) and that the demo page uses. Browser only; natively this crate is empty.
//!
//! - `Locks`: `IdbLocks` (`Locks.open`, `tryLock`, `acquire`, `holder`, `forceRelease`).
//!   `acquire` sends its first transaction before it returns, so a caller can time its
//!   place in the queue.
//! - `Lock`: a held lease (`token`, `deadline`, `release`, `renew`, `isHeld`).
//! - `Fence`: the store side of fencing (a `Fence` of the core) for the protected
//!   "ledger" of the fault test and the demo.
//! - `benchCycles`: try_lock + release cycles timed in Rust, for the benchmark.
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations)]

#[cfg(target_arch = "wasm32")]
mod bindings;
#[cfg(target_arch = "wasm32")]
pub use bindings::*;
