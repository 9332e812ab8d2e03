//! Exact deadlines, tokens and clock handling: validation before any state changes,
//! lapsing at the deadline, renew as an absolute reset, a clock stepping back, and what
//! `remaining` and `ttl` read.

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use alkstore_mem::{
    Config, InputProblem, LockError, LockRegistry, ManualClock, Timestamp, TtlProblem,
};
use alkstore_mem_conformance::manual_registry;
use core::time::Duration;

use super::{SEC, ms, wait_for};

#[test]
fn invalid_names_are_refused_before_any_state_changes() {
    let reg = LockRegistry::with_config(ManualClock::new(), Config::default().with_max_name_len(8));
    let cases: [(&str, InputProblem); 3] = [
        ("", InputProblem::Empty),
        ("123456789", InputProblem::TooLong { len: 9, max: 8 }),
        (
            "a\tb",
            InputProblem::ControlCharacter { index: 1, ch: '\t' },
        ),
    ];
    for (name, problem) in cases {
        match reg.try_lock(name, "a", SEC) {
            Err(LockError::InvalidName { problem: p, .. }) => assert_eq!(p, problem, "{name:?}"),
            other => panic!("{name:?}: expected InvalidName, got {other:?}"),
        }
    }
    // Exactly at the limit is fine, and nothing was granted by the refused calls.
    assert!(reg.try_lock("12345678", "a", SEC).unwrap().is_some());
    let next = reg.try_lock("other", "a", SEC).unwrap().unwrap();
    assert_eq!(next.token(), 2, "refused calls consumed no fencing token");
}

#[test]
fn huge_ttl_saturates_instead_of_wrapping() {
    let (reg, clock) = manual_registry();
    clock.set(Timestamp::from_millis(5));
    let mut lock = reg
        .try_lock("forever", "a", Duration::MAX)
        .unwrap()
        .unwrap();
    assert_eq!(lock.deadline(), Timestamp::MAX);
    clock.set(Timestamp::from_nanos(u64::MAX - 1));
    assert!(lock.is_held());
    lock.renew(Duration::MAX).unwrap();
    assert_eq!(lock.deadline(), Timestamp::MAX);
}

#[test]
fn zero_ttl_is_refused_by_try_lock_and_renew() {
    let (reg, clock) = manual_registry();
    assert_eq!(
        reg.try_lock("job", "a", Duration::ZERO).unwrap_err(),
        LockError::InvalidTtl {
            ttl: Duration::ZERO,
            problem: TtlProblem::Zero,
        }
    );
    assert!(
        reg.holder("job").is_none(),
        "no silently lapsed lease was created"
    );
    let mut lock = reg.try_lock("job", "a", SEC).unwrap().unwrap();
    clock.advance(ms(400));
    assert!(matches!(
        lock.renew(Duration::ZERO),
        Err(LockError::InvalidTtl { .. })
    ));
    assert_eq!(
        lock.deadline(),
        Timestamp::from_millis(1000),
        "lease unchanged"
    );
    assert_eq!(
        reg.holder("job").unwrap().deadline(),
        Timestamp::from_millis(1000)
    );
    clock.advance(ms(599));
    assert!(lock.is_held());
}

#[test]
fn lease_lapses_exactly_at_its_deadline() {
    let (reg, clock) = manual_registry();
    let lock = reg.try_lock("job", "a", ms(100)).unwrap().unwrap();
    assert_eq!(lock.deadline(), Timestamp::from_millis(100));
    clock.set(Timestamp::from_nanos(99_999_999));
    assert!(lock.is_held());
    assert!(reg.try_lock("job", "b", SEC).unwrap().is_none());
    clock.set(Timestamp::from_millis(100));
    assert!(!lock.is_held());
    assert!(
        reg.holder("job").is_none(),
        "lapse is silent: the name is free"
    );
    assert!(reg.try_lock("job", "b", SEC).unwrap().is_some());
}

#[test]
fn renew_is_an_absolute_reset_even_when_earlier() {
    let (reg, clock) = manual_registry();
    let mut lock = reg.try_lock("job", "a", ms(10_000)).unwrap().unwrap();
    let token = lock.token();
    clock.advance(ms(1_000));
    lock.renew(ms(500)).unwrap();
    assert_eq!(
        lock.deadline(),
        Timestamp::from_millis(1_500),
        "now + ttl, earlier than before"
    );
    assert_eq!(lock.token(), token);
    clock.advance(ms(500));
    assert!(
        !lock.is_held(),
        "the shortened lease lapsed at its new deadline"
    );
}

#[test]
fn renew_after_lapse_is_refused_and_does_not_revive() {
    let (reg, clock) = manual_registry();
    let mut lock = reg.try_lock("job", "a", ms(100)).unwrap().unwrap();
    clock.advance(ms(100));
    let err = lock.renew(SEC).unwrap_err();
    assert_eq!(
        err,
        LockError::Expired {
            name: "job".into(),
            token: lock.token(),
            ttl: ms(100),
            deadline: Timestamp::from_millis(100),
            now: Timestamp::from_millis(100),
        }
    );
    assert!(!lock.is_held());
    assert!(reg.holder("job").is_none(), "not revived");
    assert!(lock.renew(SEC).is_err(), "and stays refused");
}

#[test]
fn dropping_a_lock_releases_it() {
    let (reg, _) = manual_registry();
    {
        let _lock = reg.try_lock("job", "a", SEC).unwrap().unwrap();
        assert!(reg.holder("job").is_some());
    }
    assert!(reg.holder("job").is_none());
}

#[test]
fn clock_stepping_back_never_revives_a_lapsed_lease() {
    let (reg, clock) = manual_registry();
    let mut lock = reg.try_lock("job", "a", ms(100)).unwrap().unwrap();
    clock.set(Timestamp::from_millis(150));
    assert!(!lock.is_held());
    clock.set(Timestamp::from_millis(50));
    assert!(!lock.is_held(), "seen lapsed, stays lapsed");
    assert!(reg.holder("job").is_none());
    assert!(lock.renew(SEC).is_err());
    let next = reg.try_lock("job", "b", ms(100)).unwrap().unwrap();
    assert_eq!(
        next.deadline(),
        Timestamp::from_millis(250),
        "granted against the latest reading, 150 ms, not the stepped-back 50 ms"
    );
}

// remaining and ttl.

#[test]
fn remaining_counts_down_to_zero_at_the_deadline() {
    let (reg, clock) = manual_registry();
    let mut lock = reg.try_lock("job", "a", ms(1_000)).unwrap().unwrap();
    assert_eq!(lock.remaining(), ms(1_000));
    clock.advance(ms(300));
    assert_eq!(lock.remaining(), ms(700));
    lock.renew(ms(500)).unwrap();
    assert_eq!(lock.remaining(), ms(500), "renew resets it");
    clock.advance(ms(499));
    assert_eq!(lock.remaining(), ms(1));
    clock.advance(ms(1));
    assert_eq!(lock.remaining(), Duration::ZERO, "lapsed");
    clock.set(Timestamp::from_millis(100));
    assert_eq!(
        lock.remaining(),
        Duration::ZERO,
        "a clock stepping back does not revive it"
    );
}

#[test]
fn remaining_is_zero_once_another_lease_holds_the_name() {
    let (reg, clock) = manual_registry();
    let stale = reg.try_lock("job", "a", ms(100)).unwrap().unwrap();
    clock.advance(ms(100));
    let fresh = reg.try_lock("job", "a", SEC).unwrap().unwrap();
    assert_eq!(stale.remaining(), Duration::ZERO);
    assert_eq!(fresh.remaining(), SEC);
}

#[test]
fn ttl_is_the_last_grant_or_successful_renew() {
    let (reg, clock) = manual_registry();
    let holder = reg.try_lock("job", "a", ms(3_000)).unwrap().unwrap();
    let mut lock = reg.try_lock("other", "a", ms(500)).unwrap().unwrap();
    assert_eq!((holder.ttl(), lock.ttl()), (ms(3_000), ms(500)));
    lock.renew(ms(800)).unwrap();
    assert_eq!(lock.ttl(), ms(800));
    assert!(lock.renew(Duration::ZERO).is_err());
    assert_eq!(lock.ttl(), ms(800), "a refused renew keeps it");
    clock.advance(ms(800));
    assert!(lock.renew(SEC).is_err());
    assert_eq!(lock.ttl(), ms(800), "an expired renew keeps it");
    let mut waiter = wait_for(&reg, "job", "b", ms(40), SEC);
    holder.release();
    assert_eq!(
        waiter.ready().unwrap().unwrap().ttl(),
        ms(40),
        "the waiter's ttl"
    );
}
