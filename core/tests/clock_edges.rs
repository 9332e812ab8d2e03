//! Clock readings at the edges: `0`, `u64::MAX`, and a clock that steps back, on the pure
//! table and on the registry (whose notion of now is one floor for all its shards).

use std::time::Duration;

use alkstore_mem::{Config, LockError, LockRegistry, LockTable, ManualClock, Timestamp};

const SECOND: Duration = Duration::from_secs(1);

/// Enough names to land in every shard of a registry.
fn names() -> Vec<String> {
    (0..64).map(|i| format!("name-{i}")).collect()
}

#[test]
fn table_at_max_reading_keeps_mutual_exclusion() {
    let mut table = LockTable::new(Config::default());
    let now = Timestamp::MAX;
    let lease = table.try_lock("x", "a", SECOND, now).unwrap().unwrap();
    assert_eq!(lease.deadline(), Timestamp::MAX);
    assert!(table.try_lock("x", "b", SECOND, now).unwrap().is_none());
    assert!(table.is_held(&lease, now));
    assert_eq!(table.holder("x", now).unwrap().token(), lease.token());
    assert_eq!(table.sweep(now), 0, "a MAX deadline never lapses");
    assert!(table.release(&lease, now), "it was live");
    assert!(table.try_lock("x", "b", SECOND, now).unwrap().is_some());
}

#[test]
fn table_saturated_deadline_never_lapses_and_renews_at_max() {
    let mut table = LockTable::new(Config::default());
    let mut forever = table
        .try_lock("forever", "a", Duration::MAX, Timestamp::ZERO)
        .unwrap()
        .unwrap();
    let short = table
        .try_lock("short", "a", SECOND, Timestamp::ZERO)
        .unwrap()
        .unwrap();
    assert_eq!(forever.deadline(), Timestamp::MAX);
    let max = Timestamp::MAX;
    assert!(table.is_held(&forever, max));
    assert!(!table.is_held(&short, max), "a finite deadline lapses");
    table.renew(&mut forever, SECOND, max).unwrap();
    assert!(
        table
            .try_lock("forever", "b", SECOND, max)
            .unwrap()
            .is_none()
    );
    // The table clamps to MAX from now on: the MAX lease stays live at any later reading.
    assert!(table.is_held(&forever, Timestamp::ZERO));
    assert_eq!(table.latest_now(), max);
}

#[test]
fn registry_at_max_reading_keeps_mutual_exclusion_for_good() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    clock.set(Timestamp::MAX);
    let first = registry.try_lock("job", "a", SECOND).unwrap().unwrap();
    assert!(first.is_held());
    for owner in ["b", "c", "d"] {
        assert!(registry.try_lock("job", owner, SECOND).unwrap().is_none());
    }
    // Back to a sane clock: the registry stays at MAX, and exclusion still holds.
    clock.set(Timestamp::from_millis(5));
    assert!(registry.try_lock("job", "e", SECOND).unwrap().is_none());
    assert_eq!(registry.holder("job").unwrap().owner(), "a");
    assert!(first.release());
    let next = registry.try_lock("job", "b", SECOND).unwrap().unwrap();
    assert!(registry.try_lock("job", "c", SECOND).unwrap().is_none());
    assert!(next.is_held());
}

#[test]
fn registry_at_zero_reading_grants_and_lapses_normally() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let lock = registry
        .try_lock("z", "a", Duration::from_nanos(1))
        .unwrap()
        .unwrap();
    assert_eq!(lock.deadline(), Timestamp::from_nanos(1));
    assert!(lock.is_held());
    clock.set(Timestamp::from_nanos(1));
    assert!(!lock.is_held());
}

#[test]
fn step_back_clamp_is_registry_wide_not_per_shard() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let mut locks: Vec<_> = names()
        .iter()
        .map(|n| {
            registry
                .try_lock(n, "a", Duration::from_millis(100))
                .unwrap()
                .unwrap()
        })
        .collect();
    clock.set(Timestamp::from_millis(200));
    // One operation, on one name in one shard, sees t=200.
    assert!(registry.holder("another-name").is_none());
    clock.set(Timestamp::ZERO);
    for lock in &mut locks {
        assert!(
            !lock.is_held(),
            "{} looks held after t=200 was seen",
            lock.name()
        );
        assert!(matches!(lock.renew(SECOND), Err(LockError::Expired { .. })));
    }
    for n in names() {
        assert!(registry.holder(&n).is_none());
    }
}

#[test]
fn refused_calls_do_not_advance_the_registry_clock() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let locks: Vec<_> = names()
        .iter()
        .map(|n| {
            registry
                .try_lock(n, "a", Duration::from_millis(100))
                .unwrap()
                .unwrap()
        })
        .collect();
    clock.set(Timestamp::from_millis(200));
    for i in 0..64 {
        let reserved = format!("alk:{i}");
        let control = format!("ctl\u{7}{i}");
        let plain = format!("name-{i}");
        assert!(registry.try_lock(&reserved, "a", SECOND).is_err());
        assert!(registry.try_lock(&control, "a", SECOND).is_err());
        assert!(registry.try_lock(&plain, "", SECOND).is_err());
        assert!(registry.try_lock(&plain, "a", Duration::ZERO).is_err());
        assert!(registry.holder(&control).is_none());
    }
    clock.set(Timestamp::ZERO);
    for lock in &locks {
        assert!(
            lock.is_held(),
            "a refused call moved time for {}",
            lock.name()
        );
    }
}

#[test]
fn refused_calls_do_not_advance_the_table_clock() {
    let mut table = LockTable::new(Config::default());
    let t200 = Timestamp::from_millis(200);
    assert!(table.try_lock("alk:x", "a", SECOND, t200).is_err());
    assert!(table.try_lock("a\u{1}", "a", SECOND, t200).is_err());
    assert!(table.try_lock("a", "a", Duration::ZERO, t200).is_err());
    assert_eq!(table.latest_now(), Timestamp::ZERO);
}

#[test]
fn acquire_at_max_reading_waits_for_a_hand_off_and_gets_a_live_lease() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    clock.set(Timestamp::MAX);
    let holder = registry.try_lock("job", "a", SECOND).unwrap().unwrap();
    let mut waiting = Box::pin(registry.acquire("job", "b", SECOND).timeout(SECOND));
    let mut cx = Context::from_waker(Waker::noop());
    // Its wait deadline saturates at MAX: it never elapses, and nothing is timed.
    assert!(waiting.as_mut().poll(&mut cx).is_pending());
    assert!(waiting.as_mut().poll(&mut cx).is_pending());
    assert_eq!(clock.pending_sleeps(), 0);
    assert!(registry.try_lock("job", "c", SECOND).unwrap().is_none());
    holder.release();
    let Poll::Ready(Ok(Some(lock))) = waiting.as_mut().poll(&mut cx) else {
        panic!("not handed the lease");
    };
    assert!(lock.is_held());
    assert!(registry.try_lock("job", "c", SECOND).unwrap().is_none());
}
