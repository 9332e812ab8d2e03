//! Nothing here: this crate exists for its benchmarks, which are `bench/benches/*.rs` built
//! with this crate's profile (see Cargo.toml).
