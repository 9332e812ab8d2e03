//! Waiting on a registry capped by `Config::with_max_locks` (issue 14, "a waiter that is
//! never woken"): a lost hand-off keeps its room, and a waiter polled only when woken (as a
//! real executor polls) still resolves once its name frees, whatever frees the room.
//! Deterministic: a `ManualClock`, futures polled by hand with counting wakers.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use alkstore_mem::{Acquire, Config, Lock, LockError, LockRegistry, ManualClock, Timestamp};

const MS: Duration = Duration::from_millis(1);

struct Counter(AtomicUsize);
impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// An `acquire` polled by hand, the way an executor polls it: only when woken (or on the
/// first poll).
struct Waiter {
    future: Pin<Box<Acquire<ManualClock>>>,
    wakes: Arc<Counter>,
    /// The wake count at the last poll.
    seen: usize,
}

impl Waiter {
    fn new(future: Acquire<ManualClock>) -> Self {
        Waiter {
            future: Box::pin(future),
            wakes: Arc::new(Counter(AtomicUsize::new(0))),
            seen: 0,
        }
    }

    fn woken(&self) -> bool {
        self.wakes.0.load(Ordering::SeqCst) > self.seen
    }

    fn poll(&mut self) -> Poll<Option<Lock<ManualClock>>> {
        self.seen = self.wakes.0.load(Ordering::SeqCst);
        let waker = Waker::from(self.wakes.clone());
        let mut cx = Context::from_waker(&waker);
        (self.future.as_mut().poll(&mut cx)).map(|r| r.expect("a valid request"))
    }

    /// Polls only if woken since the last poll, as an executor would.
    fn poll_if_woken(&mut self) -> Poll<Option<Lock<ManualClock>>> {
        if self.woken() {
            self.poll()
        } else {
            Poll::Pending
        }
    }
}

/// A registry with room for one lease, and the state of issue 14: a waiter on "x" was
/// handed the lease, which lapsed before the waiter came to collect it.
fn lost_hand_off() -> (ManualClock, LockRegistry<ManualClock>, Waiter) {
    let clock = ManualClock::new();
    let registry = LockRegistry::with_config(clock.clone(), Config::new().with_max_locks(1));
    let holder = registry.try_lock("x", "a", 10 * MS).unwrap().unwrap();
    let mut waiter = Waiter::new(registry.acquire("x", "w", 10 * MS));
    assert!(waiter.poll().is_pending());
    assert!(holder.release(), "handed straight to the waiter");
    assert!(waiter.woken(), "the hand-off wakes the waiter");
    clock.advance(20 * MS); // the hand-off lapses, uncollected
    (clock, registry, waiter)
}

/// Rule 1: the room of a lost hand-off stays its waiter's. Before the fix, the lapsed slot
/// was swept for a newcomer on another name, and the waiter, back at the head of its
/// queue, was refused room and stayed queued with no sleep and nobody to wake it.
#[test]
fn a_lost_hand_off_keeps_its_room_against_other_names() {
    let (clock, registry, mut waiter) = lost_hand_off();
    assert!(
        matches!(
            registry.try_lock("y", "b", 100 * MS),
            Err(LockError::CapacityExceeded { max: 1, .. })
        ),
        "the lapsed hand-off still counts: its waiter is about to be handed it again"
    );
    assert_eq!(registry.sweep(), 0, "a sweep keeps the waiter's slot");
    let Poll::Ready(Some(lock)) = waiter.poll() else {
        panic!("the waiter is handed its name again at once");
    };
    assert_eq!((lock.name(), lock.owner()), ("x", "w"));
    assert_eq!(lock.deadline(), Timestamp::from_millis(30));
    assert!(lock.is_held());
    assert_eq!(registry.waiters(), 0);
    assert_eq!(clock.pending_sleeps(), 0);
    // Its room is given back with it.
    drop(lock);
    assert!(registry.try_lock("y", "b", 100 * MS).unwrap().is_some());
}

/// The room of a lost hand-off is kept while it is uncollected, but the name itself is
/// free: a newcomer on the same name reuses the slot in place, and the waiter queues
/// behind it, sleeping until its deadline.
#[test]
fn a_lost_hand_off_frees_its_name_but_not_its_room() {
    let (clock, registry, mut waiter) = lost_hand_off();
    let newcomer = registry.try_lock("x", "n", 10 * MS).unwrap().unwrap();
    assert!(matches!(
        registry.try_lock("y", "b", 100 * MS),
        Err(LockError::CapacityExceeded { .. })
    ));
    assert!(
        waiter.poll().is_pending(),
        "back in line, behind the newcomer"
    );
    assert_eq!(
        clock.next_sleep_deadline(),
        Some(Timestamp::from_millis(30))
    );
    assert!(newcomer.release());
    let Poll::Ready(Some(lock)) = waiter.poll_if_woken() else {
        panic!("the release hands the name to the waiter and wakes it");
    };
    assert_eq!(lock.owner(), "w");
}

/// A newcomer takes the lapsed hand-off's name and releases it before the waiter comes
/// back: the slot stays (lapsed, counted) for the waiter instead of being given back.
#[test]
fn a_release_on_a_lost_hand_off_name_keeps_the_slot_for_the_waiter() {
    let (_clock, registry, mut waiter) = lost_hand_off();
    let newcomer = registry.try_lock("x", "n", 10 * MS).unwrap().unwrap();
    assert!(newcomer.release());
    assert!(matches!(
        registry.try_lock("y", "b", 100 * MS),
        Err(LockError::CapacityExceeded { .. })
    ));
    let Poll::Ready(Some(lock)) = waiter.poll() else {
        panic!("the waiter finds its slot and takes it");
    };
    assert_eq!(lock.owner(), "w");
}

/// Rule 2, whatever frees the room: a waiter that is polled only when woken resolves once
/// its name can be granted. Each way a lease on another name can end is tried.
#[test]
fn an_unbounded_waiter_polled_only_when_woken_resolves_once_room_frees() {
    for how in ["release", "drop", "lapse", "force_release"] {
        let (clock, registry, mut waiter) = lost_hand_off();
        // Before the fix this took the room; now it is refused. Either way it must end.
        let other = registry.try_lock("y", "b", 100 * MS).ok().flatten();
        let mut resolved = waiter.poll_if_woken();
        if resolved.is_pending() {
            match how {
                "release" => drop(other.map(Lock::release)),
                "drop" => drop(other),
                "lapse" => {
                    if let Some(other) = other {
                        other.detach();
                    }
                    clock.advance(100 * MS);
                }
                _ => {
                    registry.force_release("y");
                    if let Some(other) = other {
                        other.detach();
                    }
                }
            }
            resolved = waiter.poll_if_woken();
        }
        let Poll::Ready(Some(lock)) = resolved else {
            panic!("{how}: the waiter was never woken to take its name");
        };
        assert_eq!((lock.name(), lock.owner()), ("x", "w"), "{how}");
        assert!(lock.is_held(), "{how}");
    }
}

/// Two waiters, both handed the name in turn while neither collects it: each lost hand-off
/// keeps the room, and both are served in order.
#[test]
fn two_lost_hand_offs_in_a_row_are_both_served() {
    let clock = ManualClock::new();
    let registry = LockRegistry::with_config(clock.clone(), Config::new().with_max_locks(1));
    let holder = registry.try_lock("x", "a", 10 * MS).unwrap().unwrap();
    let mut first = Waiter::new(registry.acquire("x", "w1", 10 * MS));
    let mut second = Waiter::new(registry.acquire("x", "w2", 10 * MS));
    assert!(first.poll().is_pending());
    assert!(second.poll().is_pending());
    drop(holder); // to w1, who sleeps through it
    assert!(
        second.woken(),
        "the new head is woken to follow the new holder's deadline"
    );
    assert!(second.poll().is_pending());
    clock.advance(10 * MS); // w1's hand-off lapses; w2 is due
    let Poll::Ready(Some(lock2)) = second.poll_if_woken() else {
        panic!("w2 takes the lapsed hand-off");
    };
    assert!(matches!(
        registry.try_lock("y", "b", MS),
        Err(LockError::CapacityExceeded { .. })
    ));
    assert!(
        first.poll().is_pending(),
        "w1 lost its hand-off: back at the head"
    );
    drop(lock2);
    let Poll::Ready(Some(lock1)) = first.poll_if_woken() else {
        panic!("w1 is handed the name when w2 lets go");
    };
    assert_eq!(lock1.owner(), "w1");
}

/// A waiter whose hand-off lapsed is cancelled (its future dropped): its room is given
/// back.
#[test]
fn a_cancelled_lost_hand_off_gives_its_room_back() {
    let (_clock, registry, waiter) = lost_hand_off();
    drop(waiter);
    assert_eq!(registry.waiters(), 0);
    assert!(registry.try_lock("y", "b", 100 * MS).unwrap().is_some());
}

/// A bounded waiter whose hand-off lapsed after its wait elapsed resolves to `None` and
/// gives its room back.
#[test]
fn a_timed_out_lost_hand_off_gives_its_room_back() {
    let clock = ManualClock::new();
    let registry = LockRegistry::with_config(clock.clone(), Config::new().with_max_locks(1));
    let holder = registry.try_lock("x", "a", 10 * MS).unwrap().unwrap();
    let mut waiter = Waiter::new(registry.acquire("x", "w", 10 * MS).timeout(15 * MS));
    assert!(waiter.poll().is_pending());
    drop(holder);
    clock.advance(20 * MS);
    assert!(matches!(waiter.poll(), Poll::Ready(None)));
    assert!(registry.try_lock("y", "b", 100 * MS).unwrap().is_some());
}
