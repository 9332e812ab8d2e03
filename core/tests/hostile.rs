//! Hostile wakers and callers: wakers whose clone, wake or drop call back into the registry
//! (or its clock) must not deadlock it; wakers that panic must leave it fully usable; a
//! waiter handed a lease that lapsed before it collected it must not get a lapsed lease.
//!
//! Deadlocks are detected by running each scenario on its own thread and waiting for it with
//! a generous timeout.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

use alkstore_mem::{Acquire, Lock, LockRegistry, ManualClock, Timer, Timestamp};

#[path = "hostile/waker.rs"]
mod waker;
use waker::{Hooks, hostile_waker, panics_once};

const MS: Duration = Duration::from_millis(1);

/// Runs `scenario` on its own thread; fails if it does not finish within 20 s.
fn without_deadlock(what: &str, scenario: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    let handle = thread::spawn(move || {
        scenario();
        let _ = done.send(());
    });
    match finished.recv_timeout(Duration::from_secs(20)) {
        Ok(()) => handle.join().unwrap(),
        // The scenario panicked: report its panic.
        Err(mpsc::RecvTimeoutError::Disconnected) => handle.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: deadlocked (no end after 20 s)"),
    }
}

/// Calls back into the registry on `name` and on another name.
fn call_back(registry: &LockRegistry<ManualClock>, name: &str) -> Box<dyn Fn() + Send + Sync> {
    let (registry, name) = (registry.clone(), name.to_owned());
    Box::new(move || {
        let _ = registry.holder(&name);
        let _ = registry.try_lock(&name, "hook", MS);
        if let Ok(Some(lock)) = registry.try_lock("elsewhere", "hook", MS) {
            lock.release();
        }
        let _ = registry.waiters();
        let _ = registry.clock().pending_sleeps();
    })
}

/// Polls a waiting future: whether it was granted (a granted lock is dropped at once).
fn poll(future: &mut Pin<Box<Acquire<ManualClock>>>, waker: &Waker) -> Poll<bool> {
    poll_lock(future, waker).map(|lock| lock.is_some())
}

fn poll_lock(
    future: &mut Pin<Box<Acquire<ManualClock>>>,
    waker: &Waker,
) -> Poll<Option<Lock<ManualClock>>> {
    future
        .as_mut()
        .poll(&mut Context::from_waker(waker))
        .map(|r| r.unwrap())
}

#[test]
fn waker_whose_clone_calls_back_into_the_registry_does_not_deadlock() {
    without_deadlock("clone hook", || {
        let clock = ManualClock::new();
        let registry = LockRegistry::new(clock.clone());
        let holder = registry.try_lock("job", "a", 10 * MS).unwrap().unwrap();
        let (waker, _) = hostile_waker(Hooks {
            on_clone: Some(call_back(&registry, "job")),
            ..Hooks::default()
        });
        let mut waiting = Box::pin(registry.acquire("job", "b", 10 * MS).timeout(100 * MS));
        assert!(poll(&mut waiting, &waker).is_pending());
        assert!(poll(&mut waiting, &waker).is_pending());
        holder.release();
        assert_eq!(poll(&mut waiting, &waker), Poll::Ready(true));
    });
}

#[test]
fn waker_whose_drop_calls_back_into_the_registry_does_not_deadlock() {
    without_deadlock("drop hook", || {
        let clock = ManualClock::new();
        let registry = LockRegistry::new(clock.clone());
        let _holder = registry.try_lock("job", "a", 10 * MS).unwrap().unwrap();
        let (first, _) = hostile_waker(Hooks {
            on_drop: Some(call_back(&registry, "job")),
            ..Hooks::default()
        });
        let (second, _) = hostile_waker(Hooks {
            on_drop: Some(call_back(&registry, "job")),
            ..Hooks::default()
        });
        let mut waiting = Box::pin(registry.acquire("job", "b", 10 * MS).timeout(100 * MS));
        assert!(poll(&mut waiting, &first).is_pending());
        // A poll with another waker replaces (and drops) the stored one.
        assert!(poll(&mut waiting, &second).is_pending());
        // Cancelling drops the stored waker and the sleep's.
        drop(waiting);
        assert_eq!(registry.waiters(), 0);
        assert_eq!(clock.pending_sleeps(), 0);
    });
}

#[test]
fn waker_whose_wake_calls_back_into_the_registry_does_not_deadlock() {
    without_deadlock("wake hook", || {
        let clock = ManualClock::new();
        let registry = LockRegistry::new(clock.clone());
        let holder = registry.try_lock("job", "a", 10 * MS).unwrap().unwrap();
        let (waker, hooks) = hostile_waker(Hooks {
            on_wake: Some(call_back(&registry, "job")),
            ..Hooks::default()
        });
        let mut waiting = Box::pin(registry.acquire("job", "b", 10 * MS).timeout(100 * MS));
        assert!(poll(&mut waiting, &waker).is_pending());
        holder.release(); // hands over and wakes, after the mutex is released
        assert!(hooks.wakes.load(Ordering::SeqCst) > 0);
        assert_eq!(poll(&mut waiting, &waker), Poll::Ready(true));
        // A sleep woken by the clock calls back too.
        let mut sleep = Box::pin(clock.sleep_until(Timestamp::from_millis(5)));
        assert!(
            sleep
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        clock.advance(5 * MS);
        assert!(
            sleep
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_ready()
        );
    });
}

#[test]
fn manual_sleep_waker_calling_back_into_its_clock_does_not_deadlock() {
    without_deadlock("sleep hooks", || {
        let clock = ManualClock::new();
        let hook = {
            let clock = clock.clone();
            move || {
                let _ = clock.pending_sleeps();
                let _ = clock.next_sleep_deadline();
            }
        };
        let (first, _) = hostile_waker(Hooks {
            on_clone: Some(Box::new(hook.clone())),
            on_drop: Some(Box::new(hook.clone())),
            on_wake: Some(Box::new(hook.clone())),
            ..Hooks::default()
        });
        let (second, _) = hostile_waker(Hooks {
            on_clone: Some(Box::new(hook.clone())),
            on_drop: Some(Box::new(hook)),
            ..Hooks::default()
        });
        let mut sleep = Box::pin(clock.sleep_until(Timestamp::from_millis(5)));
        assert!(
            sleep
                .as_mut()
                .poll(&mut Context::from_waker(&first))
                .is_pending()
        );
        assert!(
            sleep
                .as_mut()
                .poll(&mut Context::from_waker(&second))
                .is_pending()
        );
        drop(sleep);
        let mut sleep = Box::pin(clock.sleep_until(Timestamp::from_millis(5)));
        assert!(
            sleep
                .as_mut()
                .poll(&mut Context::from_waker(&first))
                .is_pending()
        );
        clock.advance(5 * MS);
        assert!(
            sleep
                .as_mut()
                .poll(&mut Context::from_waker(&first))
                .is_ready()
        );
        assert_eq!(clock.pending_sleeps(), 0);
    });
}

#[test]
fn waker_whose_drop_panics_during_cancel_leaves_the_registry_usable() {
    without_deadlock("panicking drop", || {
        let clock = ManualClock::new();
        let registry = LockRegistry::new(clock.clone());
        let holder = registry.try_lock("job", "a", 10 * MS).unwrap().unwrap();
        let armed = Arc::new(AtomicBool::new(false));
        let (waker, _) = hostile_waker(Hooks {
            on_drop: Some(panics_once(&armed)),
            ..Hooks::default()
        });
        let mut doomed = Box::pin(registry.acquire("job", "b", 10 * MS).timeout(100 * MS));
        let mut behind = Box::pin(registry.acquire("job", "c", 10 * MS).timeout(100 * MS));
        assert!(poll(&mut doomed, &waker).is_pending());
        assert!(poll(&mut behind, Waker::noop()).is_pending());
        armed.store(true, Ordering::SeqCst);
        let cancelled = catch_unwind(AssertUnwindSafe(|| drop(doomed)));
        assert!(cancelled.is_err(), "the waker's drop panicked");
        assert_eq!(registry.waiters(), 1, "the cancelled waiter is gone");
        // Everything works on: the release hands over to the waiter behind.
        assert!(registry.try_lock("job", "d", MS).unwrap().is_none());
        assert_eq!(registry.holder("job").unwrap().owner(), "a");
        assert!(holder.release());
        let Poll::Ready(Ok(Some(lock))) = behind
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
        else {
            panic!("the waiter behind was not handed the lease");
        };
        assert_eq!(lock.owner(), "c");
        assert!(lock.release());
        assert!(registry.try_lock("job", "e", MS).unwrap().is_some());
        assert_eq!(registry.waiters(), 0);
    });
}

#[test]
fn waker_whose_wake_panics_does_not_keep_other_waiters_asleep() {
    without_deadlock("panicking wake", || {
        let clock = ManualClock::new();
        let registry = LockRegistry::new(clock.clone());
        let holder = registry.try_lock("job", "a", 10 * MS).unwrap().unwrap();
        let armed = Arc::new(AtomicBool::new(true));
        let (bad, _) = hostile_waker(Hooks {
            on_wake: Some(panics_once(&armed)),
            ..Hooks::default()
        });
        let (good, good_hooks) = hostile_waker(Hooks::default());
        let mut first = Box::pin(registry.acquire("job", "b", 10 * MS).timeout(100 * MS));
        let mut second = Box::pin(registry.acquire("job", "c", 10 * MS).timeout(100 * MS));
        assert!(poll(&mut first, &bad).is_pending());
        assert!(poll(&mut second, &good).is_pending());
        // The release hands over to `first` and wakes both (the new head must follow the
        // new holder); `first`'s wake panics.
        let released = catch_unwind(AssertUnwindSafe(|| holder.release()));
        assert!(released.is_err(), "the wake panicked");
        assert!(
            good_hooks.wakes.load(Ordering::SeqCst) > 0,
            "the other waiter was never woken"
        );
        let Poll::Ready(Some(lock)) = poll_lock(&mut first, Waker::noop()) else {
            panic!("the head was not handed the lease");
        };
        assert!(poll(&mut second, &good).is_pending());
        assert_eq!(registry.holder("job").unwrap().owner(), "b");
        drop(lock); // hands over to "c"
        let Poll::Ready(Some(lock)) = poll_lock(&mut second, &good) else {
            panic!("the next waiter was not handed the lease");
        };
        assert_eq!(lock.owner(), "c");
    });
}

#[test]
fn acquire_never_returns_a_lease_that_lapsed_before_it_was_collected() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let holder = registry.try_lock("job", "a", 10 * MS).unwrap().unwrap();
    let mut waiting = Box::pin(registry.acquire("job", "b", 5 * MS).timeout(100 * MS));
    assert!(poll(&mut waiting, Waker::noop()).is_pending());
    holder.release(); // handed to "b" until t=5 ms
    clock.advance(10 * MS); // "b" lapses before it is polled
    let other = registry.try_lock("job", "x", 50 * MS).unwrap().unwrap();
    // The hand-off is lost: "b" waits again, at the head of the queue.
    assert!(poll(&mut waiting, Waker::noop()).is_pending());
    assert_eq!(registry.waiters(), 1);
    assert!(registry.try_lock("job", "y", MS).unwrap().is_none());
    other.release();
    let Poll::Ready(Ok(Some(lock))) = waiting
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    else {
        panic!("not granted after the release");
    };
    assert_eq!(lock.owner(), "b");
    assert!(lock.is_held(), "a live lease");
    assert_eq!(lock.deadline(), Timestamp::from_millis(15));
}

#[test]
fn acquire_retakes_a_lapsed_hand_off_when_the_name_is_still_free() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let holder = registry.try_lock("job", "a", 10 * MS).unwrap().unwrap();
    let mut waiting = Box::pin(registry.acquire("job", "b", 5 * MS).timeout(100 * MS));
    assert!(poll(&mut waiting, Waker::noop()).is_pending());
    let first_token = holder.token() + 1;
    holder.release();
    clock.advance(10 * MS);
    let Poll::Ready(Ok(Some(lock))) = waiting
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    else {
        panic!("not granted");
    };
    assert!(lock.is_held());
    assert!(
        lock.token() > first_token,
        "a new grant, not the lapsed one"
    );
    assert_eq!(lock.deadline(), Timestamp::from_millis(15));
}

#[test]
fn acquire_whose_wait_elapsed_with_a_lapsed_hand_off_resolves_to_none() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let holder = registry.try_lock("job", "a", 10 * MS).unwrap().unwrap();
    let mut waiting = Box::pin(registry.acquire("job", "b", 5 * MS).timeout(20 * MS));
    let mut behind = Box::pin(registry.acquire("job", "c", 50 * MS).timeout(100 * MS));
    assert!(poll(&mut waiting, Waker::noop()).is_pending());
    assert!(poll(&mut behind, Waker::noop()).is_pending());
    holder.release(); // "b" holds until t=5 ms
    clock.advance(30 * MS);
    assert_eq!(poll(&mut waiting, Waker::noop()), Poll::Ready(false));
    let Poll::Ready(Some(lock)) = poll_lock(&mut behind, Waker::noop()) else {
        panic!("the waiter behind was not handed the lease");
    };
    assert_eq!(registry.holder("job").unwrap().owner(), "c");
    assert_eq!(lock.deadline(), Timestamp::from_millis(80));
}

/// Cancelling most of a long queue, in an order that leaves holes everywhere (the cost per
/// cancel is measured by `make bench`, group "cancel a waiter": O(1), not O(queue length);
/// here, what it must not break): the waiters left are still served in arrival order, and
/// nothing of the cancelled ones stays behind.
#[test]
fn cancelling_most_of_a_long_queue_keeps_the_rest_in_order() {
    const N: usize = 20_000;
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let holder = registry.try_lock("hot", "a", MS).unwrap().unwrap();
    let mut waiting: Vec<Option<_>> = (0..N)
        .map(|i| {
            let owner = format!("w{i}");
            Some(Box::pin(registry.acquire("hot", &owner, MS)))
        })
        .collect();
    for future in waiting.iter_mut().flatten() {
        assert!(poll_lock(future, Waker::noop()).is_pending());
    }
    // Newest first, then the rest but every 97th from the front.
    for i in (N / 2..N).rev() {
        waiting[i] = None;
    }
    for (i, slot) in waiting.iter_mut().enumerate().take(N / 2) {
        if i % 97 != 0 {
            *slot = None;
        }
    }
    let kept: Vec<usize> = (0..N / 2).filter(|i| i % 97 == 0).collect();
    assert_eq!(registry.waiters(), kept.len());
    drop(holder);
    for &i in &kept {
        let future = waiting[i].as_mut().expect("kept");
        let Poll::Ready(Some(lock)) = poll_lock(future, Waker::noop()) else {
            panic!("waiter {i} was not handed the lease in its turn");
        };
        assert_eq!(lock.owner(), format!("w{i}"));
        waiting[i] = None;
        drop(lock); // hands the lease to the next one kept
    }
    assert_eq!(registry.waiters(), 0);
    assert!(registry.holder("hot").is_none());
}
