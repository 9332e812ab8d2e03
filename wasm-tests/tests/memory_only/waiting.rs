//! Waiting, exactly: wake-ups, sleeps and hand-offs before the next poll.

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use alkstore_mem::{LockError, Timestamp};
use alkstore_mem_conformance::{Probe, manual_registry};
use core::time::Duration;

use super::{SEC, Waiter, assert_nothing_queued, ms, wait_for};

#[test]
fn free_name_is_granted_at_the_first_poll() {
    let (reg, clock) = manual_registry();
    let lock = Probe::new(reg.acquire("job", "a", SEC).timeout(SEC))
        .ready()
        .unwrap()
        .unwrap();
    assert_eq!((lock.owner(), lock.token()), ("a", 1));
    assert_nothing_queued(&reg, &clock);
}

#[test]
fn validation_errors_come_at_the_first_poll_without_waiting() {
    let (reg, _) = manual_registry();
    let _holder = reg.try_lock("job", "a", SEC).unwrap().unwrap();
    let err = Probe::new(reg.acquire("", "b", SEC).timeout(SEC))
        .ready()
        .unwrap_err();
    assert!(matches!(err, LockError::InvalidName { .. }));
    let err = Probe::new(reg.acquire("job", "b", Duration::ZERO).timeout(SEC))
        .ready()
        .unwrap_err();
    assert!(matches!(err, LockError::InvalidTtl { .. }));
    assert_eq!(reg.waiters(), 0);
}

#[test]
fn zero_wait_behaves_exactly_like_try_lock() {
    let (reg, _) = manual_registry();
    let holder = Probe::new(reg.acquire("job", "a", SEC).timeout(Duration::ZERO))
        .ready()
        .unwrap()
        .unwrap();
    assert!(
        Probe::new(reg.acquire("job", "b", SEC).timeout(Duration::ZERO))
            .ready()
            .unwrap()
            .is_none()
    );
    assert!(reg.try_lock("job", "b", SEC).unwrap().is_none());
    assert_eq!(reg.waiters(), 0);
    drop(holder);
    assert!(
        Probe::new(reg.acquire("job", "b", SEC).timeout(Duration::ZERO))
            .ready()
            .unwrap()
            .is_some()
    );
}

#[test]
fn release_hands_the_lease_to_the_waiter_and_wakes_it() {
    let (reg, clock) = manual_registry();
    let holder = reg.try_lock("job", "a", ms(10_000)).unwrap().unwrap();
    let mut waiter = wait_for(&reg, "job", "b", ms(300), ms(5_000));
    assert_eq!(waiter.wakes(), 0);
    clock.advance(ms(100));
    assert!(holder.release());
    assert_eq!(waiter.wakes(), 1, "the release woke the waiter");
    let lock = waiter.ready().unwrap().expect("granted");
    assert_eq!(lock.owner(), "b");
    assert_eq!(lock.token(), 2, "a new token for the new grant");
    assert_eq!(
        lock.deadline(),
        Timestamp::from_millis(400),
        "hand-over time + the waiter's ttl"
    );
    assert_nothing_queued(&reg, &clock);
}

#[test]
fn dropping_the_holder_hands_the_lease_on_too() {
    let (reg, _) = manual_registry();
    let holder = reg.try_lock("job", "a", SEC).unwrap().unwrap();
    let mut waiter = wait_for(&reg, "job", "b", SEC, SEC);
    drop(holder);
    assert_eq!(waiter.ready().unwrap().unwrap().owner(), "b");
}

#[test]
fn waiter_takes_the_lease_when_it_lapses() {
    let (reg, clock) = manual_registry();
    reg.try_lock("job", "a", ms(100)).unwrap().unwrap().detach();
    let mut waiter = wait_for(&reg, "job", "b", ms(50), SEC);
    assert_eq!(
        clock.next_sleep_deadline(),
        Some(Timestamp::from_millis(100)),
        "the head waiter sleeps until the holder's deadline, not a polling interval"
    );
    clock.advance(ms(99));
    assert_eq!(waiter.wakes(), 0);
    clock.advance(ms(1));
    assert_eq!(waiter.wakes(), 1);
    let lock = waiter.ready().unwrap().expect("granted at the lapse");
    assert_eq!(lock.deadline(), Timestamp::from_millis(150));
    assert_nothing_queued(&reg, &clock);
}

#[test]
fn wait_that_elapses_gives_none_and_leaves_the_queue() {
    let (reg, clock) = manual_registry();
    let holder = reg.try_lock("job", "a", ms(10_000)).unwrap().unwrap();
    let mut waiter = wait_for(&reg, "job", "b", SEC, ms(50));
    assert_eq!(
        clock.next_sleep_deadline(),
        Some(Timestamp::from_millis(50))
    );
    clock.advance(ms(50));
    assert_eq!(waiter.wakes(), 1);
    assert!(waiter.ready().unwrap().is_none());
    assert_nothing_queued(&reg, &clock);
    assert!(holder.is_held());
    assert!(holder.release());
    assert!(
        reg.holder("job").is_none(),
        "a timed-out waiter is not handed anything"
    );
}

#[test]
fn five_waiters_are_served_in_arrival_order() {
    let (reg, clock) = manual_registry();
    let mut current = reg.try_lock("job", "holder", SEC).unwrap().unwrap();
    let mut waiters: Vec<Waiter> = (0..5)
        .map(|i| wait_for(&reg, "job", &format!("w{i}"), SEC, ms(10_000)))
        .collect();
    for i in 0..5 {
        current.release();
        for (j, waiter) in waiters.iter_mut().enumerate().skip(i + 1) {
            waiter.pending();
            assert!(reg.holder("job").unwrap().owner() != format!("w{j}"));
        }
        current = waiters[i].ready().unwrap().expect("next in line");
        assert_eq!(current.owner(), format!("w{i}"), "served out of order");
    }
    current.release();
    assert_nothing_queued(&reg, &clock);
}

#[test]
fn try_lock_cannot_barge_after_a_release() {
    let (reg, _) = manual_registry();
    let holder = reg.try_lock("job", "a", SEC).unwrap().unwrap();
    let mut waiter = wait_for(&reg, "job", "b", SEC, SEC);
    holder.release();
    // The waiter has not been polled since, yet the lease is already its own.
    assert!(reg.try_lock("job", "c", SEC).unwrap().is_none());
    assert!(
        Probe::new(reg.acquire("job", "c", SEC).timeout(Duration::ZERO))
            .ready()
            .unwrap()
            .is_none()
    );
    assert_eq!(reg.holder("job").unwrap().owner(), "b");
    assert_eq!(waiter.ready().unwrap().unwrap().owner(), "b");
}

#[test]
fn try_lock_cannot_barge_after_a_lapse() {
    let (reg, clock) = manual_registry();
    reg.try_lock("job", "a", ms(100)).unwrap().unwrap().detach();
    let mut waiter = wait_for(&reg, "job", "b", SEC, SEC);
    clock.set(Timestamp::from_millis(100));
    // Whoever looks first after the lapse hands the lease to the head waiter.
    assert!(reg.try_lock("job", "c", SEC).unwrap().is_none());
    assert_eq!(reg.holder("job").unwrap().owner(), "b");
    assert_eq!(waiter.ready().unwrap().unwrap().owner(), "b");
}

#[test]
fn cancelling_a_queued_waiter_removes_it() {
    let (reg, clock) = manual_registry();
    let holder = reg.try_lock("job", "a", SEC).unwrap().unwrap();
    let first = wait_for(&reg, "job", "b", SEC, SEC);
    let mut second = wait_for(&reg, "job", "c", SEC, SEC);
    assert_eq!(reg.waiters(), 2);
    drop(first);
    assert_eq!(reg.waiters(), 1);
    assert!(
        second.wakes() >= 1,
        "the new head was woken to follow the holder"
    );
    holder.release();
    assert_eq!(second.ready().unwrap().unwrap().owner(), "c");
    assert_nothing_queued(&reg, &clock);
}

#[test]
fn cancelling_a_waiter_that_was_just_handed_the_lease_passes_it_on() {
    let (reg, clock) = manual_registry();
    let holder = reg.try_lock("job", "a", SEC).unwrap().unwrap();
    let first = wait_for(&reg, "job", "b", SEC, SEC);
    let mut second = wait_for(&reg, "job", "c", SEC, SEC);
    holder.release();
    assert_eq!(reg.holder("job").unwrap().owner(), "b");
    drop(first); // handed the lease, never polled again
    assert_eq!(
        reg.holder("job").unwrap().owner(),
        "c",
        "passed on to the next waiter"
    );
    let lock = second.ready().unwrap().unwrap();
    assert_eq!((lock.owner(), lock.token()), ("c", 3));
    drop(lock);
    assert_nothing_queued(&reg, &clock);
}

#[test]
fn cancelling_the_last_waiter_after_the_hand_off_frees_the_name() {
    let (reg, clock) = manual_registry();
    let holder = reg.try_lock("job", "a", SEC).unwrap().unwrap();
    let only = wait_for(&reg, "job", "b", SEC, SEC);
    holder.release();
    drop(only);
    assert!(reg.holder("job").is_none());
    assert!(reg.try_lock("job", "c", SEC).unwrap().is_some());
    assert_nothing_queued(&reg, &clock);
}

#[test]
fn renewing_the_holder_moves_the_head_waiters_sleep() {
    let (reg, clock) = manual_registry();
    let mut holder = reg.try_lock("job", "a", ms(100)).unwrap().unwrap();
    let mut waiter = wait_for(&reg, "job", "b", SEC, ms(10_000));
    assert_eq!(
        clock.next_sleep_deadline(),
        Some(Timestamp::from_millis(100))
    );

    clock.advance(ms(50));
    holder.renew(ms(200)).unwrap(); // deadline 250
    assert_eq!(waiter.wakes(), 1, "a renew wakes the head waiter");
    waiter.pending();
    assert_eq!(
        clock.next_sleep_deadline(),
        Some(Timestamp::from_millis(250))
    );
    clock.set(Timestamp::from_millis(100));
    waiter.pending();

    holder.renew(ms(20)).unwrap(); // an absolute reset to an earlier deadline: 120
    waiter.pending();
    assert_eq!(
        clock.next_sleep_deadline(),
        Some(Timestamp::from_millis(120))
    );
    clock.set(Timestamp::from_millis(120));
    assert_eq!(waiter.ready().unwrap().unwrap().owner(), "b");
    assert!(
        holder.renew(SEC).is_err(),
        "the old holder's lease lapsed and moved on"
    );
}

#[test]
fn when_the_head_times_out_the_next_waiter_follows_the_holder() {
    let (reg, clock) = manual_registry();
    reg.try_lock("job", "a", ms(500)).unwrap().unwrap().detach();
    let mut head = wait_for(&reg, "job", "b", SEC, ms(100));
    let mut next = wait_for(&reg, "job", "c", SEC, ms(10_000));
    clock.set(Timestamp::from_millis(100));
    assert!(head.ready().unwrap().is_none());
    assert!(next.wakes() >= 1, "the new head is woken");
    next.pending();
    assert_eq!(
        clock.next_sleep_deadline(),
        Some(Timestamp::from_millis(500))
    );
    clock.set(Timestamp::from_millis(500));
    assert_eq!(next.ready().unwrap().unwrap().owner(), "c");
    assert_nothing_queued(&reg, &clock);
}

#[test]
fn waiters_on_other_names_are_independent() {
    let (reg, clock) = manual_registry();
    let a = reg.try_lock("a", "x", SEC).unwrap().unwrap();
    let _b = reg.try_lock("b", "x", SEC).unwrap().unwrap();
    let mut on_a = wait_for(&reg, "a", "y", SEC, SEC);
    let mut on_b = wait_for(&reg, "b", "y", SEC, SEC);
    a.release();
    assert!(on_a.ready().unwrap().is_some());
    on_b.pending();
    assert_eq!(on_b.wakes(), 0);
    drop(on_b);
    assert_nothing_queued(&reg, &clock);
}
