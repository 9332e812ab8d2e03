//! The adapters' clocks: the browser's in Chromium (real time, generous margins), tokio's
//! natively (paused time, exact; plus one real-time check).

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use alkstore_mem_web::{Timestamp, millis_f64_until, timestamp_from_millis_f64};
use core::time::Duration;

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

#[test]
fn js_millis_convert_exactly_to_the_microsecond_and_never_panic() {
    assert_eq!(timestamp_from_millis_f64(12.345).as_nanos(), 12_345_000);
    assert_eq!(
        timestamp_from_millis_f64(1_795_000_000_123.456).as_nanos(),
        1_795_000_000_123_456_000
    );
    assert_eq!(timestamp_from_millis_f64(f64::NAN), Timestamp::ZERO);
    assert_eq!(timestamp_from_millis_f64(-1.0), Timestamp::ZERO);
    assert_eq!(timestamp_from_millis_f64(f64::INFINITY), Timestamp::MAX);
    assert_eq!(
        millis_f64_until(Timestamp::ZERO, Timestamp::from_nanos(1)),
        1.0,
        "timer delays round up, never fire early"
    );
}

#[cfg(target_arch = "wasm32")]
mod browser {
    use super::*;
    use alkstore_mem_conformance::browser_sleep;
    use alkstore_mem_web::{Clock, DateClock, LockRegistry, PerformanceClock};
    use wasm_bindgen_test::wasm_bindgen_test;

    /// A short lease on `clock` really lapses after a real wait, and a long one does not.
    async fn short_lease_lapses_in_real_time<C: Clock>(clock: C) {
        let registry = LockRegistry::new(clock);
        let short = registry
            .try_lock("rt/short", "tab", Duration::from_millis(300))
            .unwrap()
            .unwrap();
        let long = registry
            .try_lock("rt/long", "tab", Duration::from_secs(30))
            .unwrap()
            .unwrap();
        assert!(
            short.is_held(),
            "a 300 ms lease is held right after the grant"
        );
        browser_sleep(1_200).await;
        assert!(
            !short.is_held(),
            "300 ms lease still held after a 1.2 s wait"
        );
        assert!(registry.holder("rt/short").is_none());
        let next = registry
            .try_lock("rt/short", "tab-2", Duration::from_secs(1))
            .unwrap()
            .unwrap();
        assert!(next.token() > short.token());
        assert!(long.is_held(), "a 30 s lease lapsed after 250 ms");
    }

    #[wasm_bindgen_test]
    async fn performance_clock_lease_lapses_after_a_real_wait() {
        let clock = PerformanceClock::try_new().expect("Chromium windows have performance.now");
        assert!(clock.is_monotonic());
        short_lease_lapses_in_real_time(clock).await;
    }

    #[wasm_bindgen_test]
    async fn date_clock_lease_lapses_after_a_real_wait() {
        short_lease_lapses_in_real_time(DateClock::new()).await;
    }

    #[wasm_bindgen_test]
    async fn performance_clock_is_monotonic_and_tracks_real_time() {
        let clock = PerformanceClock::new();
        let start = clock.now();
        let mut last = start;
        for _ in 0..10_000 {
            let now = clock.now();
            assert!(
                now >= last,
                "performance.now went backwards: {last:?} -> {now:?}"
            );
            last = now;
        }
        browser_sleep(100).await;
        let waited = clock.now().saturating_duration_since(start);
        assert!(
            waited >= Duration::from_millis(90) && waited < Duration::from_secs(10),
            "a 100 ms setTimeout took {waited:?} on performance.now"
        );
    }

    #[wasm_bindgen_test]
    async fn waiter_is_granted_when_a_real_lease_lapses() {
        let clock = PerformanceClock::new();
        let registry = LockRegistry::new(clock.clone());
        // Read before the grant, so the lease's deadline is at least 60 ms after it.
        let start = clock.now();
        registry
            .try_lock("rt/wait", "a", Duration::from_millis(60))
            .unwrap()
            .unwrap()
            .detach();
        let lock = registry
            .acquire("rt/wait", "b", Duration::from_secs(1))
            .timeout(Duration::from_secs(10))
            .await
            .unwrap()
            .expect("granted when the 60 ms lease lapsed");
        let waited = clock.now().saturating_duration_since(start);
        assert_eq!(lock.owner(), "b");
        assert!(
            waited >= Duration::from_millis(60),
            "granted after only {waited:?}"
        );
        assert!(
            waited < Duration::from_secs(5),
            "granted only after {waited:?}"
        );
        assert_eq!(registry.waiters(), 0);
    }

    #[wasm_bindgen_test]
    async fn wait_elapses_in_real_time_on_date_clock() {
        let clock = DateClock::new();
        let registry = LockRegistry::new(clock);
        let _holder = registry
            .try_lock("rt/busy", "a", Duration::from_secs(30))
            .unwrap()
            .unwrap();
        let start = clock.now();
        let got = registry
            .acquire("rt/busy", "b", Duration::from_secs(1))
            .timeout(Duration::from_millis(80))
            .await
            .unwrap();
        let waited = clock.now().saturating_duration_since(start);
        assert!(got.is_none());
        assert!(
            waited >= Duration::from_millis(70),
            "gave up after only {waited:?}"
        );
        assert!(
            waited < Duration::from_secs(5),
            "gave up only after {waited:?}"
        );
        assert_eq!(registry.waiters(), 0);
    }

    #[wasm_bindgen_test]
    async fn release_wakes_a_browser_waiter_before_its_timer() {
        let clock = PerformanceClock::new();
        let registry = LockRegistry::new(clock.clone());
        let holder = registry
            .try_lock("rt/hand", "a", Duration::from_secs(30))
            .unwrap()
            .unwrap();
        let waiting = registry
            .acquire("rt/hand", "b", Duration::from_secs(1))
            .timeout(Duration::from_secs(20));
        let start = clock.now();
        let releaser = async move {
            browser_sleep(30).await;
            holder.release();
        };
        wasm_bindgen_futures::spawn_local(releaser);
        let lock = waiting.await.unwrap().expect("handed over on release");
        let waited = clock.now().saturating_duration_since(start);
        assert_eq!(lock.owner(), "b");
        assert!(
            waited < Duration::from_secs(5),
            "the release did not wake the waiter: {waited:?}"
        );
    }

    /// `keep_alive` every 100 ms keeps a 600 ms lease through 1.5 s of real time (a
    /// renewal may come 500 ms late on a loaded machine and the lease still holds).
    #[wasm_bindgen_test]
    async fn keep_alive_keeps_a_real_600_ms_lease_for_1500_ms() {
        let clock = PerformanceClock::new();
        let registry = LockRegistry::new(clock.clone());
        let lock = registry
            .try_lock("rt/keep", "tab", Duration::from_millis(600))
            .unwrap()
            .unwrap();
        let token = lock.token();
        let start = clock.now();
        let gave_up = futures_lite::future::or(
            async { Some(lock.keep_alive(Duration::from_millis(100)).await) },
            async {
                browser_sleep(1_500).await;
                None
            },
        )
        .await;
        let waited = clock.now().saturating_duration_since(start);
        assert!(
            gave_up.is_none(),
            "keep_alive gave up after {waited:?}: {gave_up:?}"
        );
        assert!(
            waited >= Duration::from_millis(1_490),
            "slept only {waited:?}"
        );
        assert!(lock.is_held(), "a 600 ms lease lapsed while kept alive");
        assert_eq!(registry.holder("rt/keep").unwrap().token(), token);
        assert!(lock.release());
    }

    /// `lapsed` resolves once a 60 ms lease lapses in real time, not long before or after.
    #[wasm_bindgen_test]
    async fn lapsed_resolves_when_a_real_60_ms_lease_lapses() {
        let clock = PerformanceClock::new();
        let registry = LockRegistry::new(clock.clone());
        // Read before the grant, so the lease's deadline is at least 60 ms after it.
        let start = clock.now();
        let lock = registry
            .try_lock("rt/lapse", "tab", Duration::from_millis(60))
            .unwrap()
            .unwrap();
        let lapsed = futures_lite::future::or(
            async {
                lock.lapsed().await;
                true
            },
            async {
                browser_sleep(5_000).await;
                false
            },
        )
        .await;
        let waited = clock.now().saturating_duration_since(start);
        assert!(lapsed, "lapsed() did not resolve within {waited:?}");
        assert!(
            waited >= Duration::from_millis(60),
            "resolved after only {waited:?}"
        );
        assert!(!lock.is_held());
        assert!(registry.holder("rt/lapse").is_none());
    }

    /// Where the global scope has no `performance` (some embedded JS runtimes), `try_new`
    /// says so and `new` falls back to `Date.now()`, without a JavaScript exception.
    /// Synchronous, so no other test runs while `performance` is hidden.
    #[wasm_bindgen_test]
    fn performance_clock_falls_back_to_date_without_performance() {
        use wasm_bindgen::JsValue;
        let global = js_sys::global();
        let key = JsValue::from_str("performance");
        let saved = js_sys::Reflect::get(&global, &key).unwrap();
        assert!(js_sys::Reflect::set(&global, &key, &JsValue::UNDEFINED).unwrap());
        let missing = PerformanceClock::try_new();
        let fallback = PerformanceClock::new();
        let reading = fallback.now();
        assert!(js_sys::Reflect::set(&global, &key, &saved).unwrap());

        assert!(
            missing.is_none(),
            "try_new found a performance object that was hidden"
        );
        assert!(!fallback.is_monotonic());
        // Date.now(): milliseconds since 1970, so after 2020.
        assert!(
            reading > Timestamp::from_millis(1_577_836_800_000),
            "{reading:?}"
        );
        assert!(PerformanceClock::try_new().is_some(), "performance is back");
    }

    #[wasm_bindgen_test]
    fn date_clock_reads_the_unix_epoch_in_milliseconds() {
        let now = DateClock::new().now();
        // Between 2020 and 2200: Date.now() is milliseconds since 1970.
        assert!(now > Timestamp::from_millis(1_577_836_800_000), "{now:?}");
        assert!(now < Timestamp::from_millis(7_258_118_400_000), "{now:?}");
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod tokio_time {
    use super::*;
    use alkstore_mem_tokio::{Clock, LockRegistry, TokioClock};

    #[tokio::test(start_paused = true)]
    async fn tokio_clock_drives_expiry_exactly_under_paused_time() {
        let registry = LockRegistry::new(TokioClock::new());
        let mut lock = registry
            .try_lock("job", "a", Duration::from_millis(100))
            .unwrap()
            .unwrap();
        tokio::time::advance(Duration::from_millis(99)).await;
        assert!(lock.is_held());
        lock.renew(Duration::from_millis(100)).unwrap();
        assert_eq!(lock.deadline(), Timestamp::from_millis(199));
        tokio::time::advance(Duration::from_millis(99)).await;
        assert!(lock.is_held());
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(!lock.is_held(), "lapsed exactly at 199 ms");
        assert!(
            registry
                .try_lock("job", "b", Duration::from_secs(1))
                .unwrap()
                .is_some()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn tokio_clock_clones_share_one_anchor() {
        let clock = TokioClock::new();
        tokio::time::advance(Duration::from_secs(3)).await;
        let copy = clock;
        assert_eq!(copy.now(), clock.now());
        assert_eq!(clock.now().as_millis(), 3_000);
    }

    #[tokio::test]
    async fn tokio_clock_lease_lapses_in_real_time() {
        let registry = LockRegistry::new(TokioClock::new());
        let lock = registry
            .try_lock("rt", "a", Duration::from_millis(30))
            .unwrap()
            .unwrap();
        let long = registry
            .try_lock("rt/long", "a", Duration::from_secs(30))
            .unwrap()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            !lock.is_held(),
            "30 ms lease still held after a 200 ms sleep"
        );
        assert!(long.is_held());
    }
}
