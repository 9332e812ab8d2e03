//! The named-lock contract under `ManualClock`, one test per rule.
//! Runs natively (`cargo test`) and in headless Chromium (`make test-browser`).

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use alkstore_mem::{
    Config, InputProblem, LockError, LockRegistry, ManualClock, RESERVED_PREFIX, Timestamp,
};
use alkstore_mem_conformance::manual_registry;
use core::time::Duration;

const SEC: Duration = Duration::from_secs(1);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

// Rule 1: first wins, a busy lock is a value, not reentrant.

#[test]
fn first_try_lock_wins_and_second_gets_none() {
    let (reg, _) = manual_registry();
    let a = reg
        .try_lock("job", "a", SEC)
        .unwrap()
        .expect("free name is granted");
    assert_eq!((a.name(), a.owner()), ("job", "a"));
    assert!(reg.try_lock("job", "b", SEC).unwrap().is_none());
    assert_eq!(reg.holder("job").unwrap().owner(), "a");
}

#[test]
fn same_owner_asking_again_is_not_reentrant() {
    let (reg, _) = manual_registry();
    let _a = reg.try_lock("job", "a", SEC).unwrap().unwrap();
    assert!(reg.try_lock("job", "a", SEC).unwrap().is_none());
}

#[test]
fn distinct_names_are_independent() {
    let (reg, _) = manual_registry();
    let _a = reg.try_lock("one", "a", SEC).unwrap().unwrap();
    let _b = reg.try_lock("two", "a", SEC).unwrap().unwrap();
    assert!(reg.holder("one").is_some() && reg.holder("two").is_some());
}

// Rule 2: validation at entry.

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
fn names_with_the_reserved_prefix_in_any_case_are_refused() {
    let (reg, _) = manual_registry();
    assert_eq!(RESERVED_PREFIX, "alk:");
    for name in ["alk:x", "ALK:x", "Alk:", "aLk:queue"] {
        assert!(
            matches!(
                reg.try_lock(name, "a", SEC),
                Err(LockError::ReservedName { .. })
            ),
            "{name:?}"
        );
    }
    assert!(reg.try_lock("alk", "a", SEC).unwrap().is_some());
    assert!(reg.try_lock("x-alk:", "a", SEC).unwrap().is_some());
}

#[test]
fn any_other_utf8_is_a_valid_name() {
    let (reg, _) = manual_registry();
    for name in [
        "tenant-3/job/000123",
        "ключ",
        "鎖",
        "🚀 launch",
        " spaced ",
        "a:b/c?d#e",
    ] {
        assert!(reg.try_lock(name, "a", SEC).unwrap().is_some(), "{name:?}");
    }
}

#[test]
fn invalid_owners_are_refused() {
    let reg =
        LockRegistry::with_config(ManualClock::new(), Config::default().with_max_owner_len(4));
    assert!(matches!(
        reg.try_lock("job", "", SEC),
        Err(LockError::InvalidOwner {
            problem: InputProblem::Empty,
            ..
        })
    ));
    let err = reg.try_lock("job", "abcde", SEC).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid owner: it is 5 bytes long, over the limit of 4"
    );
    // Owners may hold any UTF-8, control characters included.
    assert!(reg.try_lock("job", "a\nb", SEC).unwrap().is_some());
}

#[test]
fn name_errors_take_precedence_over_owner_and_ttl_errors() {
    let (reg, _) = manual_registry();
    assert!(matches!(
        reg.try_lock("", "", Duration::ZERO),
        Err(LockError::InvalidName { .. })
    ));
    assert!(matches!(
        reg.try_lock("job", "", Duration::ZERO),
        Err(LockError::InvalidOwner { .. })
    ));
}

// Rule 3: duration guard.

#[test]
fn zero_ttl_is_refused_by_try_lock_and_renew() {
    let (reg, clock) = manual_registry();
    assert_eq!(
        reg.try_lock("job", "a", Duration::ZERO).unwrap_err(),
        LockError::InvalidTtl {
            ttl: Duration::ZERO
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

// Rule 4: live while now < deadline; lapse is silent.

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

// Rule 5: renew is an absolute reset, keeps the token, refused once lapsed.

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
            deadline: Timestamp::from_millis(100),
            now: Timestamp::from_millis(100),
        }
    );
    assert!(!lock.is_held());
    assert!(reg.holder("job").is_none(), "not revived");
    assert!(lock.renew(SEC).is_err(), "and stays refused");
}

#[test]
fn renew_after_someone_else_took_the_name_is_refused() {
    let (reg, clock) = manual_registry();
    let mut stale = reg.try_lock("job", "a", ms(100)).unwrap().unwrap();
    clock.advance(ms(150));
    let fresh = reg.try_lock("job", "b", SEC).unwrap().unwrap();
    assert!(matches!(stale.renew(SEC), Err(LockError::Expired { .. })));
    assert_eq!(reg.holder("job").unwrap().token(), fresh.token());
}

// Rule 6: release, stale release, detach, drop.

#[test]
fn release_frees_a_live_lease_and_reports_true() {
    let (reg, _) = manual_registry();
    let lock = reg.try_lock("job", "a", SEC).unwrap().unwrap();
    assert!(lock.release());
    assert!(reg.holder("job").is_none());
    assert!(reg.try_lock("job", "b", SEC).unwrap().is_some());
}

#[test]
fn release_after_lapse_is_false_not_an_error() {
    let (reg, clock) = manual_registry();
    let lock = reg.try_lock("job", "a", ms(10)).unwrap().unwrap();
    clock.advance(ms(10));
    assert!(!lock.release());
}

#[test]
fn stale_release_never_touches_a_newer_lease_of_the_same_owner() {
    let (reg, clock) = manual_registry();
    let stale = reg.try_lock("job", "a", ms(10)).unwrap().unwrap();
    clock.advance(ms(20));
    let fresh = reg.try_lock("job", "a", SEC).unwrap().unwrap();
    assert!(!stale.release());
    assert!(fresh.is_held());
    assert_eq!(reg.holder("job").unwrap().token(), fresh.token());
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
fn detach_leaves_the_lease_to_lapse_at_its_deadline() {
    let (reg, clock) = manual_registry();
    reg.try_lock("job", "a", ms(100)).unwrap().unwrap().detach();
    assert_eq!(reg.holder("job").unwrap().owner(), "a");
    assert!(reg.try_lock("job", "b", SEC).unwrap().is_none());
    clock.advance(ms(100));
    assert!(reg.holder("job").is_none());
    assert!(reg.try_lock("job", "b", SEC).unwrap().is_some());
}

// Rule 7: fencing tokens.

#[test]
fn fencing_tokens_strictly_increase_across_names_and_survive_renew() {
    let (reg, clock) = manual_registry();
    let mut last = 0;
    for round in 0..5u64 {
        for name in ["a", "b", "c"] {
            let mut lock = reg.try_lock(name, "w", ms(10)).unwrap().unwrap();
            assert!(
                lock.token() > last,
                "round {round} {name}: {} <= {last}",
                lock.token()
            );
            last = lock.token();
            lock.renew(ms(10)).unwrap();
            assert_eq!(lock.token(), last);
            assert_eq!(reg.holder(name).unwrap().token(), last);
            lock.detach();
        }
        clock.advance(ms(10));
    }
}

// Rule 8: capacity counts live leases only.

#[test]
fn capacity_counts_live_leases_and_busy_names_still_get_none() {
    let clock = ManualClock::new();
    let reg = LockRegistry::with_config(clock.clone(), Config::default().with_max_locks(2));
    let _a = reg.try_lock("a", "w", ms(100)).unwrap().unwrap();
    reg.try_lock("b", "w", ms(50)).unwrap().unwrap().detach();
    let err = reg.try_lock("c", "w", SEC).unwrap_err();
    assert_eq!(
        err,
        LockError::CapacityExceeded {
            name: "c".into(),
            max: 2
        }
    );
    assert!(err.to_string().contains("2 live leases"), "{err}");
    assert!(
        reg.try_lock("a", "x", SEC).unwrap().is_none(),
        "busy is still a value"
    );
    clock.advance(ms(50));
    let _c = reg
        .try_lock("c", "w", SEC)
        .unwrap()
        .expect("the lapsed lease left room");
    assert!(matches!(
        reg.try_lock("d", "w", SEC),
        Err(LockError::CapacityExceeded { .. })
    ));
}

#[test]
fn a_lapsed_lease_anywhere_in_the_registry_makes_room() {
    // Names spread over the registry's shards; whichever shard the new name falls in, the
    // lapsed lease counts as gone, and the live one still counts.
    for i in 0..64 {
        let clock = ManualClock::new();
        let reg = LockRegistry::with_config(clock.clone(), Config::default().with_max_locks(2));
        reg.try_lock("old", "w", ms(10)).unwrap().unwrap().detach();
        let _live = reg.try_lock("live", "w", SEC).unwrap().unwrap();
        clock.advance(ms(10));
        let name = format!("new-{i}");
        let _new = reg
            .try_lock(&name, "w", SEC)
            .unwrap()
            .expect("the lapsed lease left room");
        assert!(matches!(
            reg.try_lock("one-too-many", "w", SEC),
            Err(LockError::CapacityExceeded { max: 2, .. })
        ));
    }
}

// Rule 9: a clock stepping backwards is clamped.

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
