//! The wasm-bindgen half of the npm package `alkstore-idb`: [`alkstore_idb`]'s public API
//! (`IdbLocks`, `IdbLock`, `IdbConfig`, the core's `Fence`) as JavaScript classes, which the
//! package's ES module (`index.js`, beside this crate) wraps into `AlkLocks`, a
//! `navigator.locks`-shaped lock manager with ttl leases and fencing tokens.
//!
//! These classes are the package's plumbing, not its API: their names start with `Raw`
//! (except `Fence`, re-exported as is), they take durations in milliseconds and answer
//! tokens and deadlines as JavaScript numbers (tokens are checked below 2^53, deadlines are
//! milliseconds since the Unix epoch), and they report an [`alkstore_idb::LockError`] as a
//! JavaScript `Error` whose `name` says which (`"InvalidNameError"`, `"ExpiredError"`,
//! `"UnavailableError"`, ...; see `error.rs`). `index.js` turns those into its own
//! `LockError` class and adds the Web Locks rules (argument checks, `DOMException`s,
//! `AbortSignal`s).
//!
//! - `RawLocks`: an `IdbLocks` (`open`, `tryLock`, `acquire`, `steal`, `holder`, `query`,
//!   `forceRelease`).
//! - `RawPending`: a waiting `acquire` driven in the background; `cancel()` drops its future
//!   (its ticket leaves the queue, a lease already handed to it goes on).
//! - `RawLease`: a held `IdbLock` in an `Rc` inside a `RefCell`, so that `release()` can
//!   take it (`release(self)` in Rust) while `keepAlive()` and `lapsed()` (`&self`, the
//!   watches of `watch.rs`) run as spawned futures that `release()` stops first; `renew()`
//!   pauses a running keep-alive and resumes it on the new ttl.
//! - `Fence`: the core's `Fence`, for the resource a lock protects.
//!
//! Browser only: natively this crate is empty (it compiles, for `cargo check --workspace`).
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations)]

#[cfg(target_arch = "wasm32")]
mod error;
#[cfg(target_arch = "wasm32")]
mod fence;
#[cfg(target_arch = "wasm32")]
mod lease;
#[cfg(target_arch = "wasm32")]
mod locks;
#[cfg(target_arch = "wasm32")]
mod watch;

#[cfg(target_arch = "wasm32")]
pub use fence::Fence;
#[cfg(target_arch = "wasm32")]
pub use lease::RawLease;
#[cfg(target_arch = "wasm32")]
pub use locks::{RawLocks, RawPending};
