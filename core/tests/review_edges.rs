//! Hostile review: edges of the 0.2 API (lapsed, keep_alive, force_release, with_lock,
//! acquire) at clock extremes, with panicking wakers, and with force-released hand-offs.
//! Each test is named after the behaviour it pins; a failing test is a finding.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use alkstore_mem::{LockOptions, LockRegistry, ManualClock, Timestamp, with_lock};

const SEC: Duration = Duration::from_secs(1);

/// A waker that panics when woken while armed (once), and counts wakes.
struct Hostile {
    armed: AtomicBool,
    wakes: AtomicUsize,
}
impl Wake for Hostile {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        if self.armed.swap(false, Ordering::SeqCst) {
            panic!("hostile waker");
        }
    }
}
fn hostile() -> (Arc<Hostile>, Waker) {
    let h = Arc::new(Hostile {
        armed: AtomicBool::new(false),
        wakes: AtomicUsize::new(0),
    });
    (h.clone(), Waker::from(h))
}

fn noop_cx() -> Context<'static> {
    Context::from_waker(Waker::noop())
}

// ---------------------------------------------------------------- force_release vs hand-offs

/// A waiter handed the lease (not yet polled to collect it) whose lease is then
/// force-released must not resolve to a dead `Lock` while another caller holds the name.
#[test]
fn acquire_never_returns_a_lease_force_released_before_it_was_collected() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let holder = registry.try_lock("n", "a", 10 * SEC).unwrap().unwrap();
    let mut waiting = Box::pin(registry.acquire("n", "w", 10 * SEC));
    assert!(waiting.as_mut().poll(&mut noop_cx()).is_pending());
    drop(holder); // handed to "w", not collected yet
    let ended = registry
        .force_release("n")
        .expect("w's handed-over lease is live");
    assert_eq!(ended.owner(), "w");
    let other = registry.try_lock("n", "c", 10 * SEC).unwrap();
    let other = other.expect("the name is free after force_release");
    match waiting.as_mut().poll(&mut noop_cx()) {
        Poll::Ready(Ok(Some(lock))) => {
            let held = lock.is_held();
            lock.detach();
            assert!(
                held,
                "acquire resolved to a lock that is not held (token {}), while {:?} holds the name",
                ended.token(),
                registry
                    .holder("n")
                    .map(|h| (h.owner().to_owned(), h.token()))
            );
        }
        other_poll => {
            // Acceptable outcomes: still waiting (back in line), or Ok(None).
            assert!(!matches!(other_poll, Poll::Ready(Err(_))), "{other_poll:?}");
        }
    }
    drop(other);
}

/// Same, with a second waiter queued: force_release hands the name to the second waiter;
/// the first must not also come out with a lock. Two `Ok(Some(lock))` for one name at once.
#[test]
fn force_released_hand_off_does_not_yield_two_simultaneous_acquire_grants() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let holder = registry.try_lock("n", "a", 10 * SEC).unwrap().unwrap();
    let mut w1 = Box::pin(registry.acquire("n", "w1", 10 * SEC));
    let mut w2 = Box::pin(registry.acquire("n", "w2", 10 * SEC));
    assert!(w1.as_mut().poll(&mut noop_cx()).is_pending());
    assert!(w2.as_mut().poll(&mut noop_cx()).is_pending());
    drop(holder); // handed to w1
    assert_eq!(registry.force_release("n").unwrap().owner(), "w1"); // handed on to w2
    let g1 = w1.as_mut().poll(&mut noop_cx());
    let g2 = w2.as_mut().poll(&mut noop_cx());
    let granted = [&g1, &g2]
        .iter()
        .filter(|p| matches!(p, Poll::Ready(Ok(Some(_)))))
        .count();
    assert!(
        granted <= 1,
        "both waiters resolved to Ok(Some(lock)) for one name: w1 held={:?} w2 held={:?}",
        matches!(&g1, Poll::Ready(Ok(Some(l))) if l.is_held()),
        matches!(&g2, Poll::Ready(Ok(Some(l))) if l.is_held()),
    );
}

/// `with_lock` runs its body only while it holds the lease: a force-released, uncollected
/// hand-off must not run the body while another caller holds the name.
#[test]
fn with_lock_body_never_runs_while_another_caller_holds_the_name() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let holder = registry.try_lock("n", "a", 9 * SEC).unwrap().unwrap();
    let ran_while = Arc::new(std::sync::Mutex::new(None::<Option<String>>));
    let seen = ran_while.clone();
    let reg2 = registry.clone();
    let mut job = Box::pin(with_lock(
        &registry,
        "n",
        "w",
        LockOptions::ttl(9 * SEC)
            .wait(60 * SEC)
            .keep_alive(Duration::ZERO),
        move |lease| {
            let holder = reg2.holder("n").map(|h| h.owner().to_owned());
            *seen.lock().unwrap() = Some(holder.clone());
            async move { lease.token() }
        },
    ));
    assert!(job.as_mut().poll(&mut noop_cx()).is_pending());
    drop(holder);
    registry.force_release("n");
    let intruder = registry.try_lock("n", "c", 9 * SEC).unwrap().expect("free");
    let _ = job.as_mut().poll(&mut noop_cx());
    let ran = ran_while.lock().unwrap().clone();
    drop(intruder);
    if let Some(holder_during_body) = ran {
        assert_eq!(
            holder_during_body.as_deref(),
            Some("w"),
            "with_lock body ran while the name was held by someone else"
        );
    }
}

// ---------------------------------------------------------------- lapsed

/// Two `lapsed()` futures on one lock (e.g. two tasks watching a shared `&Lock`): a
/// force_release must wake both, not only the last one polled.
#[test]
fn force_release_wakes_every_pending_lapsed_of_a_lock() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let lock = registry.try_lock("n", "a", 3600 * SEC).unwrap().unwrap();
    let (h1, w1) = hostile();
    let (h2, w2) = hostile();
    let mut l1 = Box::pin(lock.lapsed());
    let mut l2 = Box::pin(lock.lapsed());
    assert!(l1.as_mut().poll(&mut Context::from_waker(&w1)).is_pending());
    assert!(l2.as_mut().poll(&mut Context::from_waker(&w2)).is_pending());
    registry.force_release("n");
    assert_eq!(h2.wakes.load(Ordering::SeqCst), 1);
    assert_eq!(
        h1.wakes.load(Ordering::SeqCst),
        1,
        "the first lapsed() future was not woken by force_release: it sleeps to the deadline"
    );
}

/// Dropping one of two `lapsed()` futures must not unregister the other.
#[test]
fn dropping_one_lapsed_keeps_the_other_registered() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let lock = registry.try_lock("n", "a", 3600 * SEC).unwrap().unwrap();
    let (h1, w1) = hostile();
    let (_h2, w2) = hostile();
    let mut l1 = Box::pin(lock.lapsed());
    let mut l2 = Box::pin(lock.lapsed());
    assert!(l1.as_mut().poll(&mut Context::from_waker(&w1)).is_pending());
    assert!(l2.as_mut().poll(&mut Context::from_waker(&w2)).is_pending());
    drop(l2);
    registry.force_release("n");
    assert_eq!(h1.wakes.load(Ordering::SeqCst), 1, "l1 was not woken");
}

// ---------------------------------------------------------------- panicking wakers

/// Another task's waker panics while a new `acquire` takes its first poll (which hands a
/// lapsed lease to the head waiter and wakes it). The new acquire's waiter must not be left
/// orphaned in the queue once its future is dropped.
#[test]
fn panicking_waker_during_first_poll_leaves_no_orphan_waiter() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let holder = registry.try_lock("n", "a", SEC).unwrap().unwrap();
    let (h1, w1) = hostile();
    let mut first = Box::pin(registry.acquire("n", "w1", SEC));
    assert!(
        first
            .as_mut()
            .poll(&mut Context::from_waker(&w1))
            .is_pending()
    );
    clock.advance(SEC); // holder lapsed; w1's sleep woken (not armed yet)
    h1.armed.store(true, Ordering::SeqCst);
    let mut second = Box::pin(registry.acquire("n", "w2", SEC));
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        let _ = second.as_mut().poll(&mut noop_cx());
    }))
    .is_err();
    assert!(
        panicked,
        "the hostile waker did not fire (scenario changed)"
    );
    drop(second); // w2 is gone
    holder.detach();
    // w1 collects and releases.
    let Poll::Ready(Ok(Some(lock))) = first.as_mut().poll(&mut noop_cx()) else {
        panic!("w1 was not granted")
    };
    assert!(lock.release());
    assert_eq!(
        registry.waiters(),
        0,
        "a dropped acquire left an orphan waiter"
    );
    assert!(
        registry.try_lock("n", "c", SEC).unwrap().is_some(),
        "the name went to the orphan waiter of a dropped acquire: {:?}",
        registry.holder("n")
    );
}

/// A waiter whose poll grants it the lease (holder lapsed) and wakes the next head, whose
/// waker panics: the grant must not be lost to a lease nobody holds a handle to.
#[test]
fn panicking_next_waker_does_not_strand_a_granted_lease() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let holder = registry.try_lock("n", "a", SEC).unwrap().unwrap();
    holder.detach();
    let mut w1 = Box::pin(registry.acquire("n", "w1", Duration::MAX));
    let (h2, wk2) = hostile();
    let mut w2 = Box::pin(registry.acquire("n", "w2", SEC));
    assert!(w1.as_mut().poll(&mut noop_cx()).is_pending());
    assert!(
        w2.as_mut()
            .poll(&mut Context::from_waker(&wk2))
            .is_pending()
    );
    clock.advance(SEC);
    h2.armed.store(true, Ordering::SeqCst);
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        let _ = w1.as_mut().poll(&mut noop_cx());
    }))
    .is_err();
    assert!(
        panicked,
        "the hostile waker did not fire (scenario changed)"
    );
    drop(w1); // the caller gave up on w1 after the panic
    // w1's lease (ttl MAX) must not be stranded: it should have gone to w2 or be free.
    let holder = registry.holder("n").map(|h| h.owner().to_owned());
    assert_ne!(
        holder.as_deref(),
        Some("w1"),
        "w1's lease (ttl MAX) is held by nobody's handle: the name is stuck for good"
    );
}

// ---------------------------------------------------------------- acquire misc

/// Polling an `Acquire` after it resolved panics ("no panic reachable from any input"):
/// recorded as the current behaviour (a caller contract violation, but reachable).
#[test]
fn acquire_polled_after_it_resolved_panics_as_documented() {
    let registry = LockRegistry::new(ManualClock::new());
    let mut fut = Box::pin(registry.acquire("n", "a", SEC));
    let Poll::Ready(Ok(Some(lock))) = fut.as_mut().poll(&mut noop_cx()) else {
        panic!()
    };
    let again = catch_unwind(AssertUnwindSafe(|| {
        fut.as_mut().poll(&mut noop_cx()).is_ready()
    }));
    drop(lock);
    assert!(
        again.is_err(),
        "behaviour changed: polled-after-Ready no longer panics"
    );
}

/// A clock whose first `now` panics inside the first poll leaves an `Acquire` that panics on
/// every later poll ("polled after it resolved") although it never resolved.
#[test]
fn acquire_survives_a_panicking_clock_on_first_poll_and_can_be_polled_again() {
    struct Flaky(ManualClock, Arc<AtomicBool>);
    impl alkstore_mem::Clock for Flaky {
        fn now(&self) -> Timestamp {
            if self.1.swap(false, Ordering::SeqCst) {
                panic!("clock");
            }
            self.0.now()
        }
    }
    impl alkstore_mem::Timer for Flaky {
        type Sleep = alkstore_mem::ManualSleep;
        fn sleep_until(&self, d: Timestamp) -> Self::Sleep {
            self.0.sleep_until(d)
        }
    }
    let armed = Arc::new(AtomicBool::new(false));
    let registry = LockRegistry::new(Flaky(ManualClock::new(), armed.clone()));
    let mut fut = Box::pin(registry.acquire("n", "a", SEC));
    armed.store(true, Ordering::SeqCst);
    assert!(
        catch_unwind(AssertUnwindSafe(|| fut
            .as_mut()
            .poll(&mut noop_cx())
            .is_ready()))
        .is_err()
    );
    // The registry itself is usable.
    assert!(registry.try_lock("m", "a", SEC).unwrap().is_some());
    let again = catch_unwind(AssertUnwindSafe(|| {
        matches!(fut.as_mut().poll(&mut noop_cx()), Poll::Ready(Ok(Some(_))))
    }));
    assert_eq!(
        again.ok(),
        Some(true),
        "the future is poisoned after a clock panic"
    );
}

/// timeout(ZERO) answers exactly as try_lock, including while waiters are queued on a free
/// name whose lease the head has not collected.
#[test]
fn timeout_zero_matches_try_lock_with_waiters_queued() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let holder = registry.try_lock("n", "a", SEC).unwrap().unwrap();
    let mut w = Box::pin(registry.acquire("n", "w", SEC));
    assert!(w.as_mut().poll(&mut noop_cx()).is_pending());
    let zero =
        futures_lite::future::block_on(registry.acquire("n", "z", SEC).timeout(Duration::ZERO));
    assert!(zero.unwrap().is_none());
    assert!(registry.try_lock("n", "t", SEC).unwrap().is_none());
    clock.advance(SEC); // holder lapsed, w is head: both newcomers must still get None
    let zero =
        futures_lite::future::block_on(registry.acquire("n", "z", SEC).timeout(Duration::ZERO));
    assert!(
        zero.unwrap().is_none(),
        "timeout(ZERO) barged past a queued waiter"
    );
    assert!(
        registry.try_lock("n", "t", SEC).unwrap().is_none(),
        "try_lock barged"
    );
    drop(holder);
    assert!(matches!(
        w.as_mut().poll(&mut noop_cx()),
        Poll::Ready(Ok(Some(_)))
    ));
    // timeout() after the first poll changes nothing (documented).
    let h = registry.try_lock("m", "a", SEC).unwrap().unwrap();
    let mut f = Box::pin(registry.acquire("m", "b", SEC));
    assert!(f.as_mut().poll(&mut noop_cx()).is_pending());
    let f = Pin::into_inner(f).timeout(Duration::ZERO);
    let mut f = Box::pin(f);
    assert!(f.as_mut().poll(&mut noop_cx()).is_pending());
    drop(h);
    assert!(matches!(
        f.as_mut().poll(&mut noop_cx()),
        Poll::Ready(Ok(Some(_)))
    ));
}
