//! Capacity (`max_locks`): what counts against it, lapsed leases anywhere in the registry
//! making room, and the room a waiter is owed.

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use alkstore_mem::{Config, LockError, LockRegistry, ManualClock, Timestamp};
use alkstore_mem_conformance::Probe;

use super::{SEC, ms, wait_for};

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

#[test]
fn acquire_on_a_full_registry_finds_room_left_by_any_lapsed_lease() {
    use alkstore_mem::Config;
    for i in 0..64 {
        let clock = ManualClock::new();
        let reg = LockRegistry::with_config(clock.clone(), Config::default().with_max_locks(1));
        reg.try_lock("old", "w", ms(10)).unwrap().unwrap().detach();
        clock.advance(ms(10));
        let name = format!("new-{i}");
        let lock = Probe::new(reg.acquire(&name, "w", SEC).timeout(SEC))
            .ready()
            .unwrap();
        assert!(lock.is_some(), "{name}: the lapsed lease left room");
        let err = Probe::new(reg.acquire("more", "w", SEC).timeout(SEC))
            .ready()
            .unwrap_err();
        assert!(matches!(err, LockError::CapacityExceeded { max: 1, .. }));
    }
}

#[test]
fn a_hand_off_reuses_the_released_slot_on_a_full_registry() {
    use alkstore_mem::Config;
    let clock = ManualClock::new();
    let reg = LockRegistry::with_config(clock.clone(), Config::default().with_max_locks(1));
    let holder = reg.try_lock("job", "a", SEC).unwrap().unwrap();
    let mut waiter = wait_for(&reg, "job", "b", SEC, SEC);
    assert!(holder.release());
    assert!(
        matches!(
            reg.try_lock("other", "c", SEC),
            Err(LockError::CapacityExceeded { .. })
        ),
        "the released slot went to the waiter, not to a newcomer"
    );
    let lock = waiter.ready().unwrap().unwrap();
    assert_eq!(lock.owner(), "b");
    drop(lock);
    assert!(reg.try_lock("other", "c", SEC).unwrap().is_some());
}

#[test]
fn a_lapsed_lease_with_a_waiter_keeps_its_room_on_a_full_registry() {
    use alkstore_mem::Config;
    let clock = ManualClock::new();
    let reg = LockRegistry::with_config(clock.clone(), Config::default().with_max_locks(1));
    reg.try_lock("job", "a", ms(100)).unwrap().unwrap().detach();
    let mut waiter = wait_for(&reg, "job", "b", SEC, SEC);
    clock.set(Timestamp::from_millis(100));
    // The lapsed lease is the waiter's to take: a newcomer does not get its room, sweeps
    // or no sweeps, and the waiter is handed the lease.
    assert!(matches!(
        reg.try_lock("other", "c", SEC),
        Err(LockError::CapacityExceeded { .. })
    ));
    assert_eq!(reg.sweep(), 0, "a sweep keeps the slot a waiter is owed");
    assert!(waiter.wakes() <= 1);
    let lock = waiter.ready().unwrap().expect("handed the lapsed lease");
    assert_eq!(
        (lock.owner(), lock.deadline()),
        ("b", Timestamp::from_millis(1_100))
    );
    drop(lock);
    assert!(reg.try_lock("other", "c", SEC).unwrap().is_some());
}
