//! Review of issue 15 (not part of the product): alkstore-idb for JavaScript with the whole
//! handle surface, so that `review15.mjs` can attack the engine across pages and workers:
//! `keep_alive`, `lapsed`, `renew`, `info()` in µs, `with_lock`, and futures dropped at any
//! point (`Pending.cancel()`). Browser only; natively this crate is empty.
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations)]

#[cfg(target_arch = "wasm32")]
mod bindings;
#[cfg(target_arch = "wasm32")]
pub use bindings::*;
