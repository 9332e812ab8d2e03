//! What only the in-memory engine can show: exact deadlines, tokens and wake-ups under a
//! `ManualClock` (futures polled by hand with a counting waker), capacity (`max_locks`),
//! a clock stepping back, and the registry's own API (`force_release`, `snapshot`,
//! `remaining`, `ttl`, `waiters`, `sweep`). The rules every engine shares are in
//! `src/bodies/`, run by `tests/memory.rs`.
//! Runs natively (`cargo test`) and in headless Chromium (`make test-browser`).

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use alkstore_mem::{
    Acquire, Config, InputProblem, LockError, LockRegistry, ManualClock, Snapshot, Timestamp,
    TtlProblem, Waiting,
};
use alkstore_mem_conformance::{Probe, manual_registry};
use core::time::Duration;

const SEC: Duration = Duration::from_secs(1);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

type Waiter = Probe<Acquire<ManualClock>>;

/// An `acquire` bounded by `wait`, polled once: it must be queued.
fn wait_for(
    reg: &LockRegistry<ManualClock>,
    name: &str,
    owner: &str,
    ttl: Duration,
    wait: Duration,
) -> Waiter {
    let mut probe = Probe::new(reg.acquire(name, owner, ttl).timeout(wait));
    probe.pending();
    probe
}

/// Nothing is left behind: no waiter entries, no sleeps registered on the clock.
#[track_caller]
fn assert_nothing_queued(reg: &LockRegistry<ManualClock>, clock: &ManualClock) {
    assert_eq!(reg.waiters(), 0, "waiter entries leaked");
    assert_eq!(clock.pending_sleeps(), 0, "sleeps leaked");
}

// Exact deadlines, tokens and clock handling.

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

// Waiting, exactly: wake-ups, sleeps and hand-offs before the next poll.

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

// force_release.

#[test]
fn force_release_ends_the_lease_whoever_holds_it() {
    let (reg, _) = manual_registry();
    let mut stuck = reg.try_lock("job", "a", ms(3_600_000)).unwrap().unwrap();
    let ended = reg.force_release("job").expect("it was held");
    assert_eq!(ended, stuck.info());
    assert!(!stuck.is_held());
    assert_eq!(stuck.remaining(), Duration::ZERO);
    assert!(matches!(stuck.renew(SEC), Err(LockError::Expired { token, .. }) if token == 1));
    assert!(reg.holder("job").is_none());
    let next = reg.try_lock("job", "b", SEC).unwrap().unwrap();
    assert!(next.token() > stuck.token());
    assert!(!stuck.release(), "a force-released handle releases nothing");
    assert!(next.is_held(), "and never the newer lease");
}

#[test]
fn force_release_of_a_free_lapsed_or_invalid_name_is_none() {
    let (reg, clock) = manual_registry();
    assert!(reg.force_release("job").is_none());
    assert!(reg.force_release("").is_none());
    assert!(reg.force_release("alk:job").is_none());
    reg.try_lock("job", "a", ms(10)).unwrap().unwrap().detach();
    clock.advance(ms(10));
    assert!(reg.force_release("job").is_none(), "the lease had lapsed");
}

#[test]
fn force_release_serves_the_waiters_in_order_with_larger_tokens() {
    let (reg, clock) = manual_registry();
    let stuck = reg.try_lock("job", "a", ms(100_000)).unwrap().unwrap();
    let mut first = wait_for(&reg, "job", "b", SEC, ms(10_000));
    let mut second = wait_for(&reg, "job", "c", SEC, ms(10_000));
    assert_eq!(reg.force_release("job").unwrap().owner(), "a");
    assert_eq!(first.wakes(), 1, "the head waiter is woken");
    let b = first.ready().unwrap().expect("handed to the head waiter");
    assert_eq!((b.owner(), b.token()), ("b", 2));
    second.pending();
    assert_eq!(reg.force_release("job").unwrap().token(), 2);
    let c = second.ready().unwrap().expect("then to the next");
    assert_eq!((c.owner(), c.token()), ("c", 3));
    assert!(!stuck.is_held() && !b.is_held());
    drop((b, c));
    assert_nothing_queued(&reg, &clock);
}

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

// snapshot.

#[test]
fn snapshot_lists_leases_by_name_and_waiters_in_queue_order() {
    let (reg, clock) = manual_registry();
    assert_eq!(reg.snapshot(), Snapshot::default());
    // Enough names to land in several shards; granted out of order.
    let names = ["m", "c", "x", "a", "q", "f", "z", "b"];
    let locks: Vec<_> = names
        .iter()
        .map(|n| {
            reg.try_lock(n, &format!("owner-{n}"), SEC)
                .unwrap()
                .unwrap()
        })
        .collect();
    reg.try_lock("lapsing", "l", ms(10))
        .unwrap()
        .unwrap()
        .detach();
    let _q2 = wait_for(&reg, "q", "q-2", SEC, ms(10_000));
    let _a1 = wait_for(&reg, "a", "a-1", SEC, ms(10_000));
    let _q1 = wait_for(&reg, "q", "q-3", SEC, ms(10_000));
    let _a2 = wait_for(&reg, "a", "a-2", SEC, ms(10_000));
    let dropped = wait_for(&reg, "q", "gone", SEC, ms(10_000));
    drop(dropped);
    clock.advance(ms(10));

    let snapshot = reg.snapshot();
    let held: Vec<(&str, &str)> = snapshot
        .held
        .iter()
        .map(|l| (l.name(), l.owner()))
        .collect();
    let mut expected: Vec<&str> = names.to_vec();
    expected.sort_unstable();
    assert_eq!(
        held.iter().map(|h| h.0).collect::<Vec<_>>(),
        expected,
        "live leases only, sorted by name"
    );
    for lock in &locks {
        assert!(snapshot.held.contains(&lock.info()));
    }
    let waiting: Vec<(&str, &str)> = (snapshot.waiting.iter())
        .map(|w: &Waiting| (w.name.as_str(), w.owner.as_str()))
        .collect();
    assert_eq!(
        waiting,
        [("a", "a-1"), ("a", "a-2"), ("q", "q-2"), ("q", "q-3")],
        "by name, then in queue order; withdrawn waiters gone"
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

#[test]
fn sweep_reclaims_lapsed_leases_only() {
    let (reg, clock) = manual_registry();
    reg.try_lock("old-1", "w", ms(10))
        .unwrap()
        .unwrap()
        .detach();
    reg.try_lock("old-2", "w", ms(10))
        .unwrap()
        .unwrap()
        .detach();
    let live = reg.try_lock("live", "w", SEC).unwrap().unwrap();
    clock.advance(ms(10));
    assert_eq!(reg.sweep(), 2);
    assert_eq!(reg.sweep(), 0);
    assert!(live.is_held());
    assert_eq!(reg.snapshot().held.len(), 1);
}
