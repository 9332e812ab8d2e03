//! Nothing to import: this package holds the PostgreSQL engine's bench and demo binaries
//! (`src/bin/bench.rs`, `src/bin/demo.rs`), run by `make bench-pg` and `make demo-pg`.
