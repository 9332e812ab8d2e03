//! The shared tracing test (`alkstore-kit-harness`) on PostgreSQL (this crate's `tracing`
//! feature, on for its own tests): grants, hand-offs, a lost lease, a force-release,
//! `Unavailable`.

mod common;

alkstore_kit_harness::tracing_tests!(common::Fixture);
