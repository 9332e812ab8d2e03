//! The shared conformance suite (`alkstore-mem-conformance`) on PostgreSQL: the same test
//! bodies as the in-memory engine, each on a fresh schema of the shared test cluster (`make
//! test-pg`), with time moved by the test-only offset on the server's clock (this crate's
//! `test-clock` feature, on for its own tests only), through the kit harness's `Conformance`.

mod common;

alkstore_mem_conformance::conformance_suite!(
    engine = alkstore_kit_harness::Conformance(common::Fixture),
    run = alkstore_kit_harness::support::run,
);
