//! The alkstore-mem conformance suite: the contract's rules written once, as test bodies
//! generic over an [`Engine`], and expanded into tests for each engine by
//! [`conformance_suite!`].
//!
//! - [`bodies`]: one `async fn` per rule, using only the contract traits
//!   ([`LockStore`](alkstore_mem::LockStore), [`LockHandle`](alkstore_mem::LockHandle),
//!   [`AcquireFuture`](alkstore_mem::AcquireFuture)), [`with_lock`](alkstore_mem::with_lock)
//!   and [`Engine::advance`], so that they run unchanged against the in-memory engine and
//!   a remote one.
//! - [`Engine`]: opens a fresh store with given [`Limits`] and moves its time.
//!   [`MemoryEngine`] is the in-memory engine on a `ManualClock`.
//! - [`support`]: the polling helpers the bodies share (counted in store round trips,
//!   never in real time).
//! - `tests/`: `memory.rs` runs the suite on [`MemoryEngine`], natively and in headless
//!   Chromium; the other files test what only one engine or one clock has (exact wake-ups,
//!   capacity, snapshots, tokio and browser time), with the helpers below.
//!
//! # Running the suite against an engine
//! ```text
//! // tests/conformance.rs of an engine's crate
//! #[cfg(target_arch = "wasm32")]
//! wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);
//!
//! alkstore_mem_conformance::conformance_suite!(engine = MyEngine::new(), run = my_block_on);
//! ```
//! Natively each body becomes a `#[test]` that calls `run(future)` (a `block_on`);
//! on `wasm32` an async `#[wasm_bindgen_test]` (the runner is not used there).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bodies;
mod engine;
#[cfg(not(target_arch = "wasm32"))]
pub mod recorder;
pub mod support;

pub use engine::{Engine, Limits, MemoryEngine};

/// What the macros expand to needs, reachable through `$crate`.
#[doc(hidden)]
pub mod __private {
    #[cfg(target_arch = "wasm32")]
    pub use wasm_bindgen_test;
}

/// Expands to one test per contract body in [`bodies`], for the given engine and runner.
///
/// `engine` is an expression evaluated afresh in each test (its value must implement
/// [`Engine`]); `run` is the path of a function that runs a future to completion on the
/// calling thread, such as `futures_lite::future::block_on`. Natively each test is
/// `#[test] fn rule() { run(async { bodies::topic::rule(&engine).await }) }`; on `wasm32`
/// it is an `async` `#[wasm_bindgen_test]` and `run` is not used. The test binary must
/// configure its runner itself (for browsers:
/// `wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser)`).
///
/// # Example
/// ```no_run
/// alkstore_mem_conformance::conformance_suite!(
///     engine = alkstore_mem_conformance::MemoryEngine,
///     run = futures_lite::future::block_on
/// );
/// ```
#[macro_export]
macro_rules! conformance_suite {
    (engine = $engine:expr, run = $run:path $(,)?) => {
        $crate::__conformance_tests! {
            engine = $engine,
            run = $run,
            admin::snapshot_lists_the_live_leases_sorted_by_name,
            admin::snapshot_lists_waiters_in_queue_order,
            admin::force_release_ends_the_lease_and_returns_it,
            admin::force_release_hands_the_lease_to_the_head_waiter,
            admin::force_release_of_a_free_or_invalid_name_is_none,
            exclusion::first_try_lock_wins_and_second_gets_none,
            exclusion::same_owner_asking_again_is_not_reentrant,
            exclusion::distinct_names_are_independent,
            exclusion::holder_reports_the_live_lease,
            exclusion::any_other_utf8_is_a_valid_name,
            liveness::keep_alive_keeps_the_lease_across_several_advances,
            liveness::keep_alive_with_zero_every_renews_every_third_of_the_ttl,
            liveness::keep_alive_returns_expired_once_the_lease_is_lost,
            liveness::keep_alive_clamps_an_interval_above_half_the_ttl,
            liveness::keep_alive_lets_the_work_read_the_handle,
            liveness::force_release_ends_keep_alive_and_lapsed,
            liveness::lapsed_resolves_after_the_deadline_and_not_before,
            liveness::lapsed_resolves_at_once_for_a_lapsed_lease,
            release::lease_lapses_at_its_deadline,
            release::release_frees_a_live_lease_and_reports_true,
            release::release_after_lapse_is_false_not_an_error,
            release::stale_release_never_frees_a_newer_lease,
            release::dropping_a_lock_releases_it,
            release::detach_leaves_the_lease_to_lapse_at_its_deadline,
            renew::renew_is_an_absolute_reset_even_when_earlier,
            renew::renew_with_zero_ttl_is_refused_and_changes_nothing,
            renew::renew_at_the_deadline_is_refused_with_expired,
            renew::renew_after_someone_else_took_the_name_is_refused,
            tokens::fencing_tokens_strictly_increase_across_names_and_survive_renew,
            tokens::fencing_tokens_increase_through_hand_offs,
            validation::invalid_names_are_refused_with_exact_errors,
            validation::names_with_the_reserved_prefix_in_any_case_are_refused,
            validation::invalid_owners_are_refused_with_exact_errors,
            validation::zero_ttl_is_refused_with_invalid_ttl,
            validation::name_errors_take_precedence_over_owner_and_ttl_errors,
            waiting::acquire_on_a_free_name_is_granted_at_once,
            waiting::zero_wait_behaves_exactly_like_try_lock,
            waiting::unbounded_acquire_waits_for_the_release,
            waiting::release_hands_the_lease_to_the_waiter,
            waiting::waiter_takes_the_lease_when_it_lapses,
            waiting::wait_that_elapses_gives_none_and_leaves_the_queue,
            waiting::waiters_are_served_in_arrival_order,
            waiting::try_lock_cannot_barge_after_a_release,
            waiting::try_lock_cannot_barge_after_a_lapse,
            waiting::newcomers_queue_behind_existing_waiters,
            waiting::a_dropped_waiter_leaves_the_queue,
            waiting::a_lease_handed_to_a_dropped_waiter_passes_on,
            waiting::a_lease_handed_to_the_last_dropped_waiter_frees_the_name,
            waiting::when_the_head_times_out_the_next_waiter_follows_the_holder,
            waiting::waiters_on_other_names_are_independent,
            with_lock::with_lock_runs_the_body_and_releases,
            with_lock::with_lock_returns_none_when_the_wait_elapses,
            with_lock::with_lock_keeps_the_lease_alive_while_the_body_runs,
            with_lock::with_lock_returns_expired_when_the_lease_is_lost,
            with_lock::with_lock_without_keep_alive_stops_the_body_at_the_deadline,
            with_lock::with_lock_stops_the_body_when_force_released,
            with_lock::with_lock_body_that_outlives_its_lease_is_an_error_not_a_value,
        }
    };
}

/// One test per `module::body` listed, for [`conformance_suite!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_tests {
    (engine = $engine:expr, run = $run:path, $($module:ident :: $body:ident,)*) => {
        $(
            #[cfg(not(target_arch = "wasm32"))]
            #[test]
            fn $body() {
                $run(async { $crate::bodies::$module::$body(&$engine).await })
            }

            #[cfg(target_arch = "wasm32")]
            #[$crate::__private::wasm_bindgen_test::wasm_bindgen_test(
                crate = $crate::__private::wasm_bindgen_test
            )]
            async fn $body() {
                $crate::bodies::$module::$body(&$engine).await
            }
        )*
    };
}

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use alkstore_mem::{LockRegistry, ManualClock};

/// A registry on a fresh [`ManualClock`], and a clone of that clock to move time with.
pub fn manual_registry() -> (LockRegistry<ManualClock>, ManualClock) {
    let clock = ManualClock::new();
    (LockRegistry::new(clock.clone()), clock)
}

/// Waits `millis` of real time in the browser, on a `setTimeout` promise.
#[cfg(target_arch = "wasm32")]
pub async fn browser_sleep(millis: i32) {
    use wasm_bindgen::prelude::*;

    #[wasm_bindgen]
    extern "C" {
        #[wasm_bindgen(js_name = setTimeout)]
        fn set_timeout(handler: &js_sys::Function, millis: i32) -> JsValue;
    }

    let promise = js_sys::Promise::new(&mut |resolve, _reject| {
        set_timeout(&resolve, millis);
    });
    wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .expect("a setTimeout promise never rejects");
}

/// Polls a future by hand with a waker that counts its wake-ups, so a test can check both
/// what a future answers and whether it was woken when it should have been.
pub struct Probe<F: Future> {
    future: Pin<Box<F>>,
    wakes: Arc<WakeCounter>,
}

struct WakeCounter(AtomicUsize);

impl Wake for WakeCounter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl<F: Future> Probe<F> {
    /// Wraps `future`; nothing is polled yet.
    pub fn new(future: F) -> Self {
        Probe {
            future: Box::pin(future),
            wakes: Arc::new(WakeCounter(AtomicUsize::new(0))),
        }
    }

    /// Polls once.
    pub fn poll(&mut self) -> Poll<F::Output> {
        let waker = Waker::from(Arc::clone(&self.wakes));
        self.future.as_mut().poll(&mut Context::from_waker(&waker))
    }

    /// Polls once and expects `Pending`.
    #[track_caller]
    pub fn pending(&mut self) {
        assert!(
            self.poll().is_pending(),
            "expected the future to be pending"
        );
    }

    /// Polls once and expects `Ready`, returning the output.
    #[track_caller]
    pub fn ready(&mut self) -> F::Output {
        match self.poll() {
            Poll::Ready(output) => output,
            Poll::Pending => panic!("expected the future to be ready"),
        }
    }

    /// How many times the future's waker was woken so far.
    pub fn wakes(&self) -> usize {
        self.wakes.0.load(Ordering::SeqCst)
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    /// Every `pub async fn` in `bodies/` is listed in `conformance_suite!`, so no rule is
    /// written and then never run.
    #[test]
    fn every_body_is_in_the_suite() {
        let suite = include_str!("lib.rs");
        let modules = [
            ("admin", include_str!("bodies/admin.rs")),
            ("exclusion", include_str!("bodies/exclusion.rs")),
            ("liveness", include_str!("bodies/liveness.rs")),
            ("release", include_str!("bodies/release.rs")),
            ("renew", include_str!("bodies/renew.rs")),
            ("tokens", include_str!("bodies/tokens.rs")),
            ("validation", include_str!("bodies/validation.rs")),
            ("waiting", include_str!("bodies/waiting.rs")),
            ("with_lock", include_str!("bodies/with_lock.rs")),
        ];
        let mut count = 0;
        for (module, source) in modules {
            for line in source.lines() {
                let Some(rest) = line.strip_prefix("pub async fn ") else {
                    continue;
                };
                let body = rest.split('<').next().unwrap();
                let entry = format!("{module}::{body},");
                assert!(suite.contains(&entry), "{entry} is missing from the suite");
                count += 1;
            }
        }
        assert!(count >= 40, "found only {count} bodies");
    }
}

/// The top-level README's Rust examples, compiled and run as doctests (natively: the Redis
/// example needs `alkstore-redis`). They live here, in a crate that is never published, so
/// that no published crate reaches outside its own directory for them.
#[cfg(all(doctest, not(target_arch = "wasm32")))]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
