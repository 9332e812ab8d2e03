//! The host stand-ins drive a registry on real time: leases lapse, waiters are woken.
//! Native only (the browser clocks are tested in the browser by the conformance suite).
//! Margins are generous: the machine may be busy, so "before" checks leave seconds.
#![cfg(not(target_arch = "wasm32"))]

use std::time::{Duration, Instant};

use alkstore_mem_web::{
    Clock, DateClock, LockError, LockOptions, PerformanceClock, Timer, WebLockRegistry, with_lock,
};
use futures_lite::future::block_on;

const SHORT: Duration = Duration::from_millis(50);
const LONG: Duration = Duration::from_secs(30);

#[test]
fn a_lease_on_performance_clock_is_busy_then_lapses_in_real_time() -> Result<(), LockError> {
    let registry = WebLockRegistry::new(PerformanceClock::new());
    let held = registry.try_lock("long", "a", LONG)?.expect("free");
    assert!(registry.try_lock("long", "b", LONG)?.is_none(), "busy");
    assert!(held.is_held());

    let short = registry.try_lock("short", "a", SHORT)?.expect("free");
    std::thread::sleep(SHORT * 4);
    assert!(!short.is_held(), "lapsed after its ttl");
    let next = registry.try_lock("short", "b", LONG)?.expect("free again");
    assert!(next.token() > short.token(), "a larger fencing token");
    assert!(
        registry.holder("long").is_some(),
        "the long lease is still held"
    );
    Ok(())
}

#[test]
fn acquire_is_woken_when_the_lease_lapses() -> Result<(), LockError> {
    let registry = WebLockRegistry::new(PerformanceClock::new());
    let held = registry.try_lock("job", "a", SHORT)?.expect("free");
    let start = Instant::now();
    let waited = block_on(registry.acquire("job", "b", LONG).timeout(LONG))?;
    let lock = waited.expect("granted once the first lease lapsed");
    assert!(start.elapsed() < LONG, "well before the wait's bound");
    assert!(lock.token() > held.token());
    assert_eq!(lock.owner(), "b");
    Ok(())
}

#[test]
fn a_bounded_acquire_on_a_busy_name_gives_up_after_its_wait() -> Result<(), LockError> {
    let registry = WebLockRegistry::new(PerformanceClock::new());
    let _held = registry.try_lock("job", "a", LONG)?.expect("free");
    let start = Instant::now();
    let waited = block_on(registry.acquire("job", "b", LONG).timeout(SHORT))?;
    assert!(waited.is_none());
    assert!(start.elapsed() >= SHORT, "not before the wait elapsed");
    Ok(())
}

#[test]
fn with_lock_keeps_a_short_lease_alive_while_the_body_sleeps() -> Result<(), LockError> {
    let clock = PerformanceClock::new();
    let registry = WebLockRegistry::new(clock.clone());
    // A 300 ms lease renewed every 100 ms, while the body sleeps past 600 ms.
    let ttl = Duration::from_millis(300);
    let body = |lease: alkstore_mem_web::LeaseInfo| {
        let clock = clock.clone();
        let registry = registry.clone();
        async move {
            clock.sleep_until(clock.now().saturating_add(ttl * 2)).await;
            registry.holder("job").map(|info| info.token()) == Some(lease.token())
        }
    };
    let options = LockOptions::ttl(ttl).wait(LONG).keep_alive(Duration::ZERO);
    let still_held = block_on(with_lock(&registry, "job", "a", options, body))?;
    assert_eq!(still_held, Some(true), "renewed past twice its ttl");
    assert!(registry.holder("job").is_none(), "released afterwards");
    Ok(())
}

#[test]
fn sleeps_on_both_clocks_end_at_their_deadline() {
    let performance = PerformanceClock::new();
    let deadline = performance.now().saturating_add(SHORT);
    block_on(performance.sleep_until(deadline));
    assert!(performance.now() >= deadline);

    let date = DateClock::new();
    let start = Instant::now();
    block_on(date.sleep_until(date.now().saturating_add(SHORT)));
    assert!(start.elapsed() >= SHORT);
}
