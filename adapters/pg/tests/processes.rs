//! The shared multi-process suite (`alkstore-kit-harness`) on the shared PostgreSQL: four
//! processes on four names never overlap, and tokens increase in file order.

mod common;

alkstore_kit_harness::process_tests!(common::Fixture);
