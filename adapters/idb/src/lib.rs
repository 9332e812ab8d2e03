//! alkstore-idb (work in progress).
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations)]
#![allow(dead_code)]

mod tx;
