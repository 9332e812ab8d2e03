//! The shared fault suite (`alkstore-kit-harness`) on PostgreSQL: throwaway clusters of the
//! tests' own on the Makefile's PG_FAULT_PORTS, stopped by pid when done (a holder process
//! killed with SIGKILL, the server stopped immediately and started again on its data, the
//! server paused with SIGSTOP, every backend terminated with `pg_terminate_backend`, a waiter
//! process killed). PostgreSQL's own faults (pooled connections terminated mid-call, crashes
//! and tokens, stalls during bounded waits) are in `review13_faults.rs`.

mod common;

alkstore_kit_harness::fault_tests!(common::Fixture);
