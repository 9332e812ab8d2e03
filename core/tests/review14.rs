//! Hostile review of 0.3 (issue 14) on the in-memory engine: keep_alive(&self), with_lock,
//! Fence, the operator's view, serde and tracing. Each test names the promise it checks.
//! Run with `cargo test -p alkstore-mem --all-features --test review14`.

use std::pin::pin;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use alkstore_mem::{LockError, LockRegistry, ManualClock, Timer, Timestamp};

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn noop() -> Context<'static> {
    Context::from_waker(Waker::noop())
}

// -------------------------------------------------------------------------------------------
// 1. keep_alive first polled with less than `every` left: the lease must still be kept, and
//    keep_alive must never run past the lease's deadline.
// -------------------------------------------------------------------------------------------

/// A lock taken at t=0 for 10 s; the work that needs it starts at t=6 s and only then
/// starts `keep_alive(5 s)` (5 s is half the ttl: no clamp applies). The lease has 4 s
/// left, more than enough for a renewal. The contract: keep_alive "renews it at least every
/// half ttl" and "never runs past its deadline". What happens: the first renewal is timed
/// from the first poll (t=11 s), after the deadline (t=10 s); the lease lapses with
/// keep_alive pending, and keep_alive resolves only at t=11 s, a second after the deadline.
#[test]
fn keep_alive_started_late_keeps_the_lease_and_never_runs_past_its_deadline() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let lock = registry.try_lock("job", "a", secs(10)).unwrap().unwrap();
    clock.advance(secs(6)); // setup work before the keep-alive starts
    let mut cx = noop();
    let mut alive = pin!(lock.keep_alive(secs(5)));
    assert!(alive.as_mut().poll(&mut cx).is_pending());
    // Step to the deadline, a millisecond at a time, polling as a runtime would when woken.
    for _ in 0..4_000 {
        clock.advance(Duration::from_millis(1));
        if let Poll::Ready(err) = alive.as_mut().poll(&mut cx) {
            panic!(
                "keep_alive ended at {:?} with {err} though the lease had 4 s left when it \
                 started",
                alkstore_mem::Clock::now(&clock)
            );
        }
    }
    // t = 10 s: the lease's original deadline. keep_alive must have renewed by now, or have
    // ended (it may never run past the deadline of a lease it failed to keep).
    assert!(
        lock.is_held(),
        "at t=10 s the lease lapsed with keep_alive(5 s) running since t=6 s (holder: {:?})",
        registry.holder("job")
    );
}

/// The same on tokio's paused clock, as a user writes it (`select!` against the work): the
/// work runs 7 s on a 10 s lease whose keep-alive started at t=6 s.
#[test]
fn keep_alive_started_late_under_tokio_keeps_the_lease_for_the_work() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let clock = TokioLikeClock::new();
        let registry = LockRegistry::new(clock.clone());
        let lock = registry.try_lock("job", "a", secs(10)).unwrap().unwrap();
        tokio::time::sleep(secs(6)).await;
        let work = async {
            tokio::time::sleep(secs(7)).await;
            lock.token()
        };
        tokio::select! {
            err = lock.keep_alive(secs(5)) => panic!(
                "keep_alive gave up at t={:?} (lease deadline {:?}): {err}",
                alkstore_mem::Clock::now(&clock), lock.deadline()
            ),
            token = work => assert_eq!(token, lock.token()),
        }
    });
}

/// A clock on tokio's (paused) time, as alkstore-mem-tokio's `TokioClock` is; kept here so
/// that this file needs only the core.
#[derive(Clone, Debug)]
struct TokioLikeClock(tokio::time::Instant);

impl TokioLikeClock {
    fn new() -> Self {
        TokioLikeClock(tokio::time::Instant::now())
    }
}

impl alkstore_mem::Clock for TokioLikeClock {
    fn now(&self) -> Timestamp {
        let nanos = self.0.elapsed().as_nanos();
        Timestamp::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

impl alkstore_mem::Timer for TokioLikeClock {
    type Sleep = tokio::time::Sleep;
    fn sleep_until(&self, at: Timestamp) -> Self::Sleep {
        tokio::time::sleep_until(self.0 + Duration::from_nanos(at.as_nanos()))
    }
}

// -------------------------------------------------------------------------------------------
// 2. Two keep_alives on one handle (it is `Sync`, and keep_alive takes `&self`): deadline()
//    must follow the latest renewal, never go back to an older one.
// -------------------------------------------------------------------------------------------

/// A waker that, the first time it is woken, reports that and then blocks until released:
/// it holds the thread that woke it at that point.
struct Gate {
    entered: Mutex<Option<mpsc::Sender<()>>>,
    release: Mutex<Option<mpsc::Receiver<()>>>,
}

impl Wake for Gate {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(entered) = self.entered.lock().unwrap().take() {
            let _ = entered.send(());
            if let Some(release) = self.release.lock().unwrap().take() {
                let _ = release.recv();
            }
        }
    }
}

/// Thread A's keep_alive renews at t=1 s (deadline 11 s), thread B's at t=2 s (deadline
/// 12 s); A's write of its deadline into the handle lands last (A is held, by a waker that
/// A's renewal wakes, between the table's update and the handle's). The table says 12 s;
/// the handle must too. What happens: `deadline()` and `info()` go back to 11 s, an older
/// renewal overwriting a newer one.
#[test]
fn racing_keep_alives_on_one_handle_never_leave_an_older_deadline_in_it() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let lock = registry.try_lock("job", "a", secs(10)).unwrap().unwrap();

    // A waiter, so that each renewal wakes the head waiter (deferred, after the shard's lock).
    let (entered_tx, entered_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel();
    let gate = Arc::new(Gate {
        entered: Mutex::new(Some(entered_tx)),
        release: Mutex::new(Some(release_rx)),
    });
    let gate_waker = Waker::from(Arc::clone(&gate));
    let mut waiter = pin!(registry.acquire("job", "w", secs(10)));
    assert!(
        waiter
            .as_mut()
            .poll(&mut Context::from_waker(&gate_waker))
            .is_pending()
    );

    let mut cx = noop();
    let mut b = pin!(lock.keep_alive(secs(1)));
    assert!(b.as_mut().poll(&mut cx).is_pending()); // B's first renewal due at t=1 s
    let (ready_tx, ready_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let lock = &lock;
        scope.spawn(move || {
            let mut cx = noop();
            let mut a = pin!(lock.keep_alive(secs(1)));
            assert!(a.as_mut().poll(&mut cx).is_pending()); // due at t=1 s
            ready_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            // Renews at t=1 s to 11 s, and is held by the gate before it writes that down.
            let _ = a.as_mut().poll(&mut cx);
        });
        ready_rx.recv().unwrap();
        clock.advance(secs(1));
        go_tx.send(()).unwrap();
        entered_rx.recv().unwrap(); // A renewed in the table, not yet in the handle
        clock.advance(secs(1));
        assert!(b.as_mut().poll(&mut cx).is_pending()); // B renews at t=2 s to 12 s
        assert_eq!(lock.deadline(), Timestamp::from_millis(12_000));
        release_tx.send(()).unwrap();
    });
    let table = registry.holder("job").unwrap().deadline();
    assert_eq!(table, Timestamp::from_millis(12_000));
    assert_eq!(
        lock.deadline(),
        table,
        "the handle's deadline went back to an older renewal's"
    );
    assert_eq!(lock.info().deadline(), table);
}

// -------------------------------------------------------------------------------------------
// 3. A tracing subscriber is user code: one that panics must not strand a grant (0.2 fixed
//    exactly this for wakers: "what the call did is recorded before any user code runs").
// -------------------------------------------------------------------------------------------

#[cfg(feature = "tracing")]
#[path = "review14/panicking_subscriber.rs"]
mod panicking_subscriber;

// -------------------------------------------------------------------------------------------
// 4. serde: a deserialized LeaseInfo is hostile input.
// -------------------------------------------------------------------------------------------

/// `LeaseInfo::new`'s docs: "It compares equal to any `LeaseInfo` with the same name, owner,
/// token and deadline" (so, by implication, not to one with another name). Two leases whose
/// name and owner differ but whose `name + NUL + owner` texts are the same compare equal:
/// the equality compares the joined text, not the name and the owner. Reachable with any
/// `LeaseInfo` from serde (a lease read back from an admin API, a cache) or `LeaseInfo::new`.
#[cfg(feature = "serde")]
#[test]
fn leases_with_different_names_or_owners_never_compare_equal() {
    let a: alkstore_mem::LeaseInfo =
        serde_json::from_str(r#"{"name":"a\u0000b","owner":"c","token":7,"deadline":5}"#).unwrap();
    let b: alkstore_mem::LeaseInfo =
        serde_json::from_str(r#"{"name":"a","owner":"b\u0000c","token":7,"deadline":5}"#).unwrap();
    assert_ne!((a.name(), a.owner()), (b.name(), b.owner()));
    assert_ne!(a, b, "{a:?} == {b:?}");
}

/// The same through `LeaseInfo::new`, without serde.
#[test]
fn lease_infos_built_by_hand_compare_by_name_and_owner() {
    let t = Timestamp::from_millis(5);
    let a = alkstore_mem::LeaseInfo::new("job\0x", "w", 1, t);
    let b = alkstore_mem::LeaseInfo::new("job", "x\0w", 1, t);
    assert_ne!(a, b, "{a:?} == {b:?}");
}

// -------------------------------------------------------------------------------------------
// 5. What held up (kept as regression tests): with_lock, Fence and keep_alive at the edges.
// -------------------------------------------------------------------------------------------

#[test]
fn with_lock_whose_body_panics_releases_the_lease() {
    use alkstore_mem::{LockOptions, with_lock};
    let registry = LockRegistry::new(ManualClock::new());
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        futures_lite::future::block_on(with_lock(
            &registry,
            "job",
            "a",
            LockOptions::ttl(secs(3600)).keep_alive(Duration::ZERO),
            |_| async { panic!("body bug") },
        ))
    }));
    assert!(outcome.is_err());
    assert_eq!(
        registry.holder("job"),
        None,
        "released by the unwinding drop"
    );
}

#[test]
fn with_lock_with_a_zero_wait_on_a_busy_name_never_runs_the_body() {
    use alkstore_mem::{LockOptions, with_lock};
    let registry = LockRegistry::new(ManualClock::new());
    let _held = registry.try_lock("job", "a", secs(10)).unwrap().unwrap();
    let ran = std::cell::Cell::new(false);
    let out = futures_lite::future::block_on(with_lock(
        &registry,
        "job",
        "b",
        LockOptions::ttl(secs(10)).wait(Duration::ZERO),
        |_| async { ran.set(true) },
    ));
    assert_eq!(out, Ok(None));
    assert!(!ran.get());
    assert!(registry.waiters() == 0, "a zero wait never queues");
}

/// The body finishes in the very poll in which the lease reaches its deadline: lost.
#[test]
fn with_lock_whose_body_ends_exactly_at_the_deadline_reports_the_loss() {
    use alkstore_mem::{LockOptions, with_lock};
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let mut job = pin!(with_lock(
        &registry,
        "job",
        "a",
        LockOptions::ttl(secs(10)),
        |_| clock.sleep_until(Timestamp::from_millis(10_000)),
    ));
    let mut cx = noop();
    assert!(job.as_mut().poll(&mut cx).is_pending());
    clock.advance(secs(10));
    let Poll::Ready(out) = job.as_mut().poll(&mut cx) else {
        panic!("pending after the deadline")
    };
    assert!(matches!(out, Err(LockError::Expired { .. })), "{out:?}");
}

#[test]
fn fence_at_the_top_of_the_token_range() {
    let fence = alkstore_mem::Fence::new();
    assert!(fence.check(u64::MAX).is_ok());
    assert!(fence.check(u64::MAX).is_ok());
    let err = fence.check(1).unwrap_err();
    assert_eq!((err.token, err.highest), (1, u64::MAX));
    assert_eq!(fence.highest(), Some(u64::MAX));
}

#[test]
fn keep_alive_with_huge_intervals_and_ttls_never_spins_nor_lapses() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let forever = registry.try_lock("a", "x", Duration::MAX).unwrap().unwrap();
    let short = registry.try_lock("b", "x", secs(4)).unwrap().unwrap();
    let mut cx = noop();
    let mut f = pin!(forever.keep_alive(Duration::MAX));
    let mut s = pin!(short.keep_alive(Duration::MAX)); // clamped to 2 s
    for _ in 0..10 {
        assert!(f.as_mut().poll(&mut cx).is_pending());
        assert!(s.as_mut().poll(&mut cx).is_pending());
        clock.advance(secs(2));
    }
    assert!(forever.is_held() && short.is_held());
    clock.set(Timestamp::MAX);
    assert!(
        f.as_mut().poll(&mut cx).is_pending(),
        "a lease that never lapses"
    );
    assert!(forever.is_held());
}
