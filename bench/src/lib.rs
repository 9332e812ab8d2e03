//! What the alkstore-mem benchmarks compare against, and the workload they share.
//!
//! The items live in `baselines.rs`, which each benchmark also compiles into its own crate;
//! see that module's documentation for why, and for the list of baselines.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod baselines;

pub use baselines::*;
