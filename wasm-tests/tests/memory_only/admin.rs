//! The registry's own operator API: `force_release`, `snapshot` and `sweep`.

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use alkstore_mem::{LockError, Snapshot, Waiting};
use alkstore_mem_conformance::manual_registry;
use core::time::Duration;

use super::{SEC, assert_nothing_queued, ms, wait_for};

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
