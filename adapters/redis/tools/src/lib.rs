//! Nothing to import: this package holds the Redis engine's bench and demo binaries
//! (`src/bin/bench.rs`, `src/bin/demo.rs`), run by `make bench-redis` and `make demo-redis`.
