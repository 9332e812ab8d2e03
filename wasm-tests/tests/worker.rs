//! The browser clock in a dedicated worker, where there is no `window`: `performance` comes
//! from the worker's global scope. Browser only; natively this file has no tests.
#![cfg(target_arch = "wasm32")]

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_dedicated_worker);

use alkstore_mem_conformance::browser_sleep;
use alkstore_mem_web::{LockRegistry, PerformanceClock};
use core::time::Duration;
use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen_test]
async fn performance_clock_works_in_a_dedicated_worker() {
    let clock = PerformanceClock::try_new().expect("workers have performance.now");
    let registry = LockRegistry::new(clock);
    let lock = registry
        .try_lock("worker/job", "w", Duration::from_millis(400))
        .unwrap()
        .unwrap();
    assert!(
        registry
            .try_lock("worker/job", "x", Duration::from_secs(1))
            .unwrap()
            .is_none()
    );
    browser_sleep(1_200).await;
    assert!(
        !lock.is_held(),
        "400 ms lease still held after a 1.2 s wait in a worker"
    );
    assert!(
        registry
            .try_lock("worker/job", "x", Duration::from_secs(1))
            .unwrap()
            .is_some()
    );
}
