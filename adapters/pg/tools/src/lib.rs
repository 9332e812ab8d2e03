//! Nothing to import: this package holds the PostgreSQL engine's bench and demo binaries
//! (`src/bin/pg-bench.rs`, `src/bin/pg-snapshot.rs`, `src/bin/pg-demo.rs`), run by
//! `make bench-pg` and `make demo-pg`.
