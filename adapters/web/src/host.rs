//! The host backend (every target but wasm32): std time, and one shared timer thread.
//!
//! Meant for host tooling and tests (rust-analyzer, `cargo check`, native unit tests of code
//! written for the browser), not for servers: those want `alkstore-mem-tokio`.
//!
//! # The timer thread
//! Sleeps register `(deadline, id) -> waker` in one process-wide ordered map. One thread,
//! started by the first sleep that has to wait, waits on a condvar until the earliest
//! deadline, takes every entry that is due out of the map, and wakes those wakers after
//! releasing the lock (no waker is cloned, woken or dropped under it). A sleep that is
//! dropped removes its entry, so it is never woken; one that is polled again replaces its
//! waker. A sleep decides it is done by reading `Instant::now()` itself, so a spurious or
//! late wake-up costs nothing but a poll.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Condvar, Mutex, MutexGuard, Once, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use alkstore_mem::Timestamp;

/// A `Duration` as a [`Timestamp`], saturating (after 584 years).
fn timestamp(elapsed: Duration) -> Timestamp {
    Timestamp::from_nanos(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX))
}

/// `SystemTime` since the Unix epoch as a [`Timestamp`]; zero for a clock set before 1970.
pub(crate) fn date_now() -> Timestamp {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(Timestamp::ZERO, timestamp)
}

/// The process-wide origin of every `PerformanceClock`, as the page load is in a browser.
static ORIGIN: OnceLock<Instant> = OnceLock::new();

/// What a `PerformanceClock` reads: `Instant::now()` since the process-wide origin.
#[derive(Clone, Debug)]
pub(crate) struct PerformanceSource {
    origin: Instant,
}

impl PerformanceSource {
    pub(crate) fn new() -> Self {
        PerformanceSource {
            origin: *ORIGIN.get_or_init(Instant::now),
        }
    }

    pub(crate) fn try_new() -> Option<Self> {
        Some(Self::new())
    }

    pub(crate) fn is_monotonic(&self) -> bool {
        true
    }

    pub(crate) fn now(&self) -> Timestamp {
        timestamp(self.origin.elapsed())
    }
}

/// A sleep until an [`Instant`], woken by the shared timer thread.
#[derive(Debug)]
pub(crate) struct Sleep {
    /// `None`: beyond what an `Instant` can hold, so never.
    deadline: Option<Instant>,
    /// The id of this sleep's entry in the timer map, once registered.
    id: Option<u64>,
}

impl Sleep {
    /// A sleep of `millis` milliseconds: zero for NaN and negative values.
    pub(crate) fn new(millis: f64) -> Self {
        let after = if millis > 0.0 {
            // Err only for a delay no `Duration` holds: saturate.
            Duration::try_from_secs_f64(millis / 1_000.0).unwrap_or(Duration::MAX)
        } else {
            Duration::ZERO
        };
        Self::after(after)
    }

    /// Until the clock that read `now` reads `deadline`. The `Instant` is taken after the
    /// reading, so the sleep never ends early on a monotonic clock.
    pub(crate) fn until(now: Timestamp, deadline: Timestamp) -> Self {
        Self::after(deadline.saturating_duration_since(now))
    }

    fn after(after: Duration) -> Self {
        Sleep {
            deadline: Instant::now().checked_add(after),
            id: None,
        }
    }

    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(deadline) = self.deadline else {
            return Poll::Pending;
        };
        if Instant::now() >= deadline {
            self.deregister();
            return Poll::Ready(());
        }
        // Cloned before locking: a waker's clone and drop are user code.
        let waker = cx.waker().clone();
        let mut timers = lock();
        let replaced = match self.id {
            Some(id) => match timers.entries.get_mut(&(deadline, id)) {
                Some(registered) => Some(core::mem::replace(registered, waker)),
                // The timer thread took the entry: the deadline has passed.
                None => {
                    drop(timers);
                    self.id = None;
                    return Poll::Ready(());
                }
            },
            None => {
                let id = timers.next_id;
                timers.next_id += 1;
                self.id = Some(id);
                timers.entries.insert((deadline, id), waker);
                let earliest = timers.entries.keys().next() == Some(&(deadline, id));
                drop(timers);
                if earliest {
                    start_thread();
                    TIMERS.wake_up.notify_one();
                }
                None
            }
        };
        drop(replaced);
        Poll::Pending
    }

    fn deregister(&mut self) {
        if let (Some(id), Some(deadline)) = (self.id.take(), self.deadline) {
            let removed = lock().entries.remove(&(deadline, id));
            drop(removed); // after the lock is released
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.deregister();
    }
}

/// The shared timer state: see the module docs.
struct Timers {
    state: Mutex<State>,
    /// Signalled when an entry becomes the earliest.
    wake_up: Condvar,
}

struct State {
    entries: BTreeMap<(Instant, u64), Waker>,
    next_id: u64,
}

static TIMERS: Timers = Timers {
    state: Mutex::new(State {
        entries: BTreeMap::new(),
        next_id: 0,
    }),
    wake_up: Condvar::new(),
};

static THREAD: Once = Once::new();

/// Nothing panics while the lock is held, but a poisoned lock would still hold a valid map.
fn lock() -> MutexGuard<'static, State> {
    TIMERS.state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts the timer thread once. Panics if the OS cannot start a thread.
fn start_thread() {
    THREAD.call_once(|| {
        std::thread::Builder::new()
            .name("alkstore-mem-web-timer".into())
            .spawn(run)
            .expect("alkstore-mem-web: cannot start the timer thread");
    });
}

/// The timer thread: wakes each due sleep, then waits for the next deadline.
fn run() {
    let mut state = lock();
    loop {
        let now = Instant::now();
        // Entries at or before `now` stay in `due`; the rest go back into the map.
        let later = state.entries.split_off(&(now, u64::MAX));
        let due = core::mem::replace(&mut state.entries, later);
        if !due.is_empty() {
            drop(state);
            for waker in due.into_values() {
                // A waker that panics must not stop the timers of everyone else.
                let _ = catch_unwind(AssertUnwindSafe(|| waker.wake()));
            }
            state = lock();
            continue;
        }
        state = match state.entries.keys().next() {
            Some(&(deadline, _)) => {
                let wait = deadline.saturating_duration_since(now);
                TIMERS
                    .wake_up
                    .wait_timeout(state, wait)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
            None => TIMERS
                .wake_up
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    /// A waker that counts its wakes.
    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counting() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count::default());
        (Arc::clone(&count), Waker::from(count))
    }

    /// Once `count` says the sleep was woken, polls it with `waker`: it must be ready then.
    /// Panics after `limit`.
    fn wait_ready(sleep: &mut Sleep, count: &Count, waker: &Waker, limit: Duration) {
        let start = Instant::now();
        while count.0.load(Ordering::SeqCst) == 0 {
            assert!(start.elapsed() < limit, "not woken within {limit:?}");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(sleep.poll(&mut Context::from_waker(waker)).is_ready());
    }

    #[test]
    fn a_sleep_is_woken_by_the_timer_thread_at_its_deadline() {
        let start = Instant::now();
        let mut sleep = Sleep::new(30.0);
        let (count, waker) = counting();
        assert!(sleep.poll(&mut Context::from_waker(&waker)).is_pending());
        wait_ready(&mut sleep, &count, &waker, Duration::from_secs(10));
        assert!(start.elapsed() >= Duration::from_millis(30), "not early");
        assert_eq!(count.0.load(Ordering::SeqCst), 1, "woken once");
    }

    #[test]
    fn a_dropped_sleep_is_never_woken() {
        let (count, waker) = counting();
        let mut sleep = Sleep::new(20.0);
        assert!(sleep.poll(&mut Context::from_waker(&waker)).is_pending());
        drop(sleep);
        // A live sleep registered after it, with a later deadline, proves the thread ran past
        // the dropped one's deadline.
        let (later_count, later_waker) = counting();
        let mut later = Sleep::new(60.0);
        assert!(
            later
                .poll(&mut Context::from_waker(&later_waker))
                .is_pending()
        );
        wait_ready(
            &mut later,
            &later_count,
            &later_waker,
            Duration::from_secs(10),
        );
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(count.0.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn an_elapsed_or_zero_sleep_is_ready_without_the_thread() {
        let (count, waker) = counting();
        for millis in [0.0, -1.0, f64::NAN] {
            assert!(
                Sleep::new(millis)
                    .poll(&mut Context::from_waker(&waker))
                    .is_ready()
            );
        }
        let mut past = Sleep::until(Timestamp::from_millis(5), Timestamp::from_millis(1));
        assert!(past.poll(&mut Context::from_waker(&waker)).is_ready());
        assert_eq!(count.0.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_sleep_beyond_any_instant_stays_pending_and_registers_nothing() {
        let mut sleep = Sleep::new(f64::INFINITY);
        let (count, waker) = counting();
        assert!(sleep.poll(&mut Context::from_waker(&waker)).is_pending());
        assert!(sleep.id.is_none());
        assert_eq!(count.0.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_repolled_sleep_wakes_only_its_latest_waker() {
        let (first, first_waker) = counting();
        let (second, second_waker) = counting();
        let mut sleep = Sleep::new(20.0);
        assert!(
            sleep
                .poll(&mut Context::from_waker(&first_waker))
                .is_pending()
        );
        assert!(
            sleep
                .poll(&mut Context::from_waker(&second_waker))
                .is_pending()
        );
        wait_ready(&mut sleep, &second, &second_waker, Duration::from_secs(10));
        assert_eq!(first.0.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn performance_readings_are_monotonic_and_share_one_origin() {
        let a = PerformanceSource::new();
        let first = a.now();
        std::thread::sleep(Duration::from_millis(2));
        let b = PerformanceSource::try_new().unwrap();
        assert!(
            b.now() > first,
            "a later clock reads later, on the same timeline"
        );
        assert!(a.is_monotonic());
    }

    #[test]
    fn date_readings_are_since_the_unix_epoch() {
        // 2020-09-13 in milliseconds: any machine running this is later.
        assert!(date_now().as_millis() > 1_600_000_000_000);
    }
}
