//! `keep_alive` and `lapsed`, exactly: one wake per renewal interval, the interval's
//! clamp, the error once the lease is lost, and a force-release noticed at once.

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use alkstore_mem::{LockError, Timestamp};
use alkstore_mem_conformance::{Probe, manual_registry};
use core::time::Duration;

use super::{SEC, ms};

#[test]
fn keep_alive_and_lapsed_notice_a_force_release() {
    let (reg, clock) = manual_registry();
    let lock = reg.try_lock("job", "a", ms(3_000)).unwrap().unwrap();
    {
        let mut lapsed = Probe::new(lock.lapsed());
        lapsed.pending();
        reg.force_release("job");
        // The force-release wakes lapsed() at once, long before the old deadline.
        assert_eq!(lapsed.wakes(), 1);
        lapsed.ready();
    }
    // A keep-alive of a lease already lost gives up at its first poll.
    let mut alive = Probe::new(lock.keep_alive(SEC));
    assert!(matches!(alive.ready(), LockError::Expired { .. }));
    assert_eq!(clock.pending_sleeps(), 0);

    // A pending keep-alive is woken by the force-release at once, not at its next renewal.
    let lock = reg.try_lock("job", "a", ms(3_000)).unwrap().unwrap();
    let mut alive = Probe::new(lock.keep_alive(SEC));
    alive.pending();
    reg.force_release("job");
    assert_eq!(alive.wakes(), 1);
    assert!(matches!(alive.ready(), LockError::Expired { .. }));
    assert_eq!(clock.pending_sleeps(), 0);
}

// keep_alive and lapsed, exactly.

#[test]
fn keep_alive_renews_exactly_every_interval_with_one_wake_each() {
    let (reg, clock) = manual_registry();
    let lock = reg.try_lock("job", "a", ms(3_000)).unwrap().unwrap();
    {
        let mut alive = Probe::new(lock.keep_alive(SEC));
        alive.pending();
        assert_eq!(
            clock.next_sleep_deadline(),
            Some(Timestamp::from_millis(1_000))
        );
        for step in 1..=10u64 {
            clock.advance(ms(999));
            assert_eq!(
                alive.wakes(),
                (step - 1) as usize,
                "no wake before the interval"
            );
            clock.advance(ms(1));
            assert_eq!(alive.wakes(), step as usize, "one wake per interval");
            alive.pending();
            let now = step * 1_000;
            assert_eq!(
                reg.holder("job").unwrap().deadline(),
                Timestamp::from_millis(now + 3_000),
                "renewed to now + ttl"
            );
            assert_eq!(
                clock.next_sleep_deadline(),
                Some(Timestamp::from_millis(now + 1_000))
            );
            assert_eq!(clock.pending_sleeps(), 1);
        }
    }
    assert_eq!(
        clock.pending_sleeps(),
        0,
        "dropping keep_alive drops its sleep"
    );
    assert_eq!(lock.token(), 1);
    assert!(lock.is_held());
}

#[test]
fn keep_alive_with_zero_every_sleeps_a_third_of_the_ttl() {
    let (reg, clock) = manual_registry();
    let lock = reg.try_lock("job", "a", ms(3_000)).unwrap().unwrap();
    let mut alive = Probe::new(lock.keep_alive(Duration::ZERO));
    alive.pending();
    assert_eq!(
        clock.next_sleep_deadline(),
        Some(Timestamp::from_millis(1_000))
    );
}

#[test]
fn keep_alive_returns_expired_with_the_lease_fields_once_lost() {
    let (reg, clock) = manual_registry();
    let lock = reg.try_lock("job", "a", ms(1_000)).unwrap().unwrap();
    let mut alive = Probe::new(lock.keep_alive(ms(1_500)));
    alive.pending();
    assert_eq!(
        clock.next_sleep_deadline(),
        Some(Timestamp::from_millis(500)),
        "an interval above the ttl is clamped to half of it"
    );
    clock.advance(ms(1_500));
    assert_eq!(
        alive.ready(),
        LockError::Expired {
            name: "job".into(),
            token: 1,
            ttl: ms(1_000),
            deadline: Timestamp::from_millis(1_000),
            now: Timestamp::from_millis(1_500),
        }
    );
    drop(alive);
    assert!(!lock.is_held());
    assert_eq!(clock.pending_sleeps(), 0);
}

#[test]
fn lapsed_sleeps_until_the_deadline_and_wakes_once() {
    let (reg, clock) = manual_registry();
    let lock = reg.try_lock("job", "a", ms(500)).unwrap().unwrap();
    let mut lapsed = Probe::new(lock.lapsed());
    lapsed.pending();
    assert_eq!(
        clock.next_sleep_deadline(),
        Some(Timestamp::from_millis(500)),
        "one sleep, to the deadline, no polling"
    );
    clock.advance(ms(499));
    assert_eq!(lapsed.wakes(), 0);
    lapsed.pending();
    clock.advance(ms(1));
    assert_eq!(lapsed.wakes(), 1);
    lapsed.ready();
    assert_eq!(clock.pending_sleeps(), 0);
}

#[test]
fn lapsed_follows_a_renewal_made_before_it_was_polled_again() {
    // lapsed() borrows the handle, so the renewal comes through a second wait: renew, then
    // a fresh lapsed() sleeps to the new deadline.
    let (reg, clock) = manual_registry();
    let mut lock = reg.try_lock("job", "a", ms(500)).unwrap().unwrap();
    clock.advance(ms(400));
    lock.renew(ms(500)).unwrap();
    let mut lapsed = Probe::new(lock.lapsed());
    lapsed.pending();
    assert_eq!(
        clock.next_sleep_deadline(),
        Some(Timestamp::from_millis(900))
    );
    clock.advance(ms(100));
    assert_eq!(lapsed.wakes(), 0, "not at the old deadline");
    clock.advance(ms(400));
    lapsed.ready();
}
