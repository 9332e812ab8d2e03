//! The shared test harness of the engines with a server (Redis, PostgreSQL, ...): the
//! contract, fault (calls refused while the server is frozen included), multi-process,
//! cancel-safety and tracing tests, written once against a
//! [`Fixture`], as the conformance suite (`alkstore-mem-conformance`) is written once against
//! its `Engine`. An engine's own test folder keeps only what is about its protocol (Lua
//! scripts, SQL, `fence()`).
//!
//! # What an engine provides
//! A [`Fixture`] (usually a unit struct in the engine's `tests/common`):
//! - [`Fixture::url`]: the shared test server of the engine's `make test-<engine>` (read from
//!   an environment variable; the tests fail, with a message naming the make target, without
//!   it);
//! - [`Fixture::config`]: the engine's config in a *scope* (a Redis namespace, a PostgreSQL
//!   schema) with the shared settings of a [`CommonConfig`]; stores of one scope meet, stores
//!   of two never do. Scopes come from [`fresh_scope`] (`t<pid>_<nanos>_<n>`: valid as a Redis
//!   namespace and as a PostgreSQL schema);
//! - [`Fixture::start_server`]: a server of a test's own, in a scratch dir, listening on
//!   127.0.0.1:`port`, as a [`Server`] (kill, start again, freeze with SIGSTOP, thaw, kill
//!   every client session, count the sessions it accepted); dropping it kills it by pid;
//! - [`Fixture::FAULT_PORTS`]: the ports its fault tests may use (at least [`PORTS_NEEDED`];
//!   never the shared server's), and whether a restart keeps the data
//!   ([`Fixture::RESTART_KEEPS_DATA`]: no for a Redis without persistence, yes for PostgreSQL).
//!
//! The [`support`] module has the pieces a fixture's server is made of (signals by pid,
//! waiting for a process to be gone, scratch dirs, "does something listen on this port").
//!
//! # Running the suites
//! One macro per test binary: each expands to one `#[test]` per test body, named as the body,
//! calling it with the fixture. The binaries that run child processes (faults, processes)
//! also get a `child` test, which does nothing unless the harness runs the binary itself as
//! a child (`ALKSTORE_CHILD` set).
//! ```ignore
//! // tests/contract.rs
//! mod common;
//! alkstore_kit_harness::contract_tests!(common::Fixture);
//! // tests/faults.rs, tests/processes.rs, tests/cancel.rs, tests/tracing.rs alike:
//! alkstore_kit_harness::fault_tests!(common::Fixture);
//! alkstore_kit_harness::process_tests!(common::Fixture);
//! alkstore_kit_harness::cancel_tests!(common::Fixture);
//! alkstore_kit_harness::tracing_tests!(common::Fixture); // needs the engine's `tracing`
//! ```
//! The conformance suite runs on a fixture through [`Conformance`].
//!
//! The fault tests use [`Fixture::FAULT_PORTS`] by index (see [`ports`]); tests of one binary
//! run in parallel, so no two of them share a port. The engine's own tests (other binaries)
//! may reuse the ports: cargo runs test binaries one after another.
//!
//! Every test body is `fn(&F)` and builds its runtime ([`support::runtime`]: two workers).
//! Time is moved with the engine's test clock (`Locks::advance_test_clock`), so the engine's
//! dev-dependency on itself must turn that on (Redis: feature `test-clock`).
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations)]

pub mod cancel;
mod conformance;
pub mod contract;
pub mod faults;
mod fixture;
pub mod frozen;
pub mod processes;
pub mod runtimes;
pub mod support;
pub mod tracing;
pub mod waiting;

pub use alkstore_kit::CommonConfig;
pub use conformance::Conformance;
pub use fixture::{Config, Fixture, PORTS_NEEDED, Server, Store, ports};
pub use support::fresh_scope;

/// Expands to one `#[test]` per `module::body`, each calling it with `$fixture`.
#[doc(hidden)]
#[macro_export]
macro_rules! __harness_tests {
    ($fixture:expr, $($module:ident :: $body:ident),* $(,)?) => {
        $(
            #[test]
            fn $body() {
                $crate::$module::$body(&$fixture);
            }
        )*
    };
}

/// The contract on the shared server (see [`contract`], [`waiting`] and [`runtimes`]).
#[macro_export]
macro_rules! contract_tests {
    ($fixture:expr) => {
        $crate::__harness_tests!(
            $fixture,
            contract::a_held_name_is_busy_for_everyone_the_same_owner_included,
            contract::deadlines_are_on_the_servers_clock,
            contract::a_lapsed_lease_is_free_and_its_renew_and_release_are_refused,
            contract::renew_is_an_absolute_reset_and_refused_at_the_deadline,
            contract::release_never_frees_a_newer_lease,
            contract::tokens_strictly_increase_across_names_and_clones,
            contract::validation_errors_are_the_cores_and_need_no_server,
            contract::dropping_a_handle_releases_it,
            contract::scopes_do_not_meet,
            contract::generic_code_runs_unchanged,
            contract::stores_are_clone_debug_send_sync,
            contract::every_future_is_a_named_send_type,
            waiting::waiters_are_served_in_order_with_hand_off_and_no_barging,
            waiting::a_waiter_takes_a_lease_that_lapses_at_its_deadline,
            waiting::bounded_waits_end_with_none_and_leave_the_queue,
            waiting::a_dropped_waiter_leaves_the_queue_and_passes_on_a_handed_lease,
            waiting::keep_alive_renews_and_lapsed_resolves_when_lost,
            waiting::keep_alive_refuses_a_ttl_its_io_timeout_cannot_renew_in_time,
            waiting::sixteen_tasks_on_one_store_never_overlap_and_tokens_increase_in_order,
            runtimes::extreme_ttls_and_waits_work,
            runtimes::timeout_zero_answers_exactly_as_try_lock,
            runtimes::drops_outside_a_runtime_do_not_panic,
            runtimes::a_store_from_a_dropped_runtime_answers_promptly,
            runtimes::a_lock_dropped_when_its_runtime_shuts_down_is_released,
            runtimes::a_lock_dropped_on_a_thread_without_a_runtime_is_released_before_the_drop_returns,
        );
    };
}

/// Faults on servers of the tests' own (see [`faults`] and [`frozen`]); includes the `child`
/// entry point.
#[macro_export]
macro_rules! fault_tests {
    ($fixture:expr) => {
        $crate::__harness_tests!(
            $fixture,
            faults::child,
            faults::a_killed_holders_lease_lapses_and_the_head_waiter_of_another_process_gets_it,
            faults::a_restart_keeps_tokens_increasing_and_the_store_recovers,
            faults::a_paused_server_gives_unavailable_within_the_io_timeout,
            frozen::calls_refused_while_frozen_leave_no_lease_and_no_waiter_once_thawed,
            faults::a_bounded_wait_counts_from_its_first_poll_and_ends_within_wait_plus_io_timeout_while_frozen,
            faults::a_waiter_whose_sessions_are_killed_still_gets_the_lease,
            faults::a_crashed_unbounded_waiter_is_skipped_once_its_heartbeat_expires,
        );
    };
}

/// Several OS processes on one server (see [`processes`]); includes the `child` entry point.
#[macro_export]
macro_rules! process_tests {
    ($fixture:expr) => {
        $crate::__harness_tests!(
            $fixture,
            processes::child,
            processes::four_processes_never_overlap_and_tokens_increase_in_file_order,
        );
    };
}

/// Cancel safety: calls dropped at any point (see [`cancel`]).
#[macro_export]
macro_rules! cancel_tests {
    ($fixture:expr) => {
        $crate::__harness_tests!(
            $fixture,
            cancel::dropped_try_locks_leave_no_lease_held_by_no_handle,
            cancel::dropped_zero_waits_leave_no_lease_held_by_no_handle,
            cancel::dropped_waiting_acquires_leave_no_waiter_and_no_lease_behind,
            cancel::a_thousand_dropped_calls_open_no_new_sessions,
            cancel::a_holders_keep_alive_survives_callers_that_time_out_around_it,
        );
    };
}

/// The engine's tracing events (see [`tracing`]): needs the engine's `tracing` feature.
#[macro_export]
macro_rules! tracing_tests {
    ($fixture:expr) => {
        $crate::__harness_tests!(
            $fixture,
            tracing::grants_hand_offs_losses_force_releases_and_unavailable_are_traced,
        );
    };
}
