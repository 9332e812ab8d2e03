//! The shared fault suite (`alkstore-kit-harness`) on Redis: servers of the tests' own on the
//! Makefile's REDIS_FAULT_PORTS, killed by pid when done (a holder process killed with
//! SIGKILL, Redis restarted without persistence, Redis paused with SIGSTOP, connections
//! killed with CLIENT KILL, a waiter process killed).

mod common;

alkstore_kit_harness::fault_tests!(common::Fixture);
