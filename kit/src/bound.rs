//! The `io_timeout` bound on one call ([`Bounded`]), with its timer reused from call to call
//! ([`Spares`]).
//!
//! A fresh tokio timer per call is registered with the runtime's time driver when the call is
//! first found pending (a lock on the driver's wheel, and a wake-up of the thread parked on
//! the driver whenever it is now the earliest timer) and taken out of the wheel again when
//! the call answers, usually long before its deadline. Measured on the SQLite engine, that
//! was most of the kit's cost per call. So each store keeps a few timers that stay registered
//! between calls: a call takes one and moves it to its own deadline. That deadline is later
//! than the one the timer was set to last (the same `io_timeout`, from a later now), and then
//! tokio only moves the expiry forward in the timer's state (one atomic compare-and-swap): the
//! wheel is not touched and no thread is woken; when the old expiry comes, the driver finds
//! the later one and files the timer again. An earlier deadline, or a timer that already
//! fired, takes tokio's ordinary way (registered anew). The bound itself is exactly
//! `tokio::time::timeout`'s: the deadline is taken when the call starts, on tokio's clock
//! (paused time included), and the call is answered `None` once it passed.
//!
//! A timer goes back to the store's spares when its call answers, after being polled once with
//! a waker that does nothing, so that it keeps no waker of the caller's task; a spare whose
//! expiry comes fires waking nobody. A timer is only reused on the runtime it was made on.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Mutex, PoisonError};

use tokio::runtime::Id;
use tokio::time::{Instant, Sleep};

/// How many idle timers a store keeps: as many calls in flight at once reuse one.
const SPARES: usize = 4;

/// A timer, boxed so that it can move between calls.
type Timer = Pin<Box<Sleep>>;

/// A store's idle timers, each with the runtime it belongs to.
#[derive(Default)]
pub(crate) struct Spares(Mutex<Vec<(Id, Timer)>>);

impl Spares {
    /// An idle timer of `runtime`, if there is one.
    fn take(&self, runtime: Id) -> Option<Timer> {
        let last = self.0.lock().unwrap_or_else(PoisonError::into_inner).pop();
        // One of another runtime is of no use here (dropped outside the lock).
        last.and_then(|(id, timer)| (id == runtime).then_some(timer))
    }

    /// Keeps `timer` of `runtime` for the next call, unless enough are kept.
    fn put(&self, runtime: Id, timer: Timer) {
        let mut spares = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if spares.len() < SPARES {
            spares.push((runtime, timer));
            return;
        }
        drop(spares);
        drop(timer);
    }

    /// How many idle timers are kept (tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// `call`, answered `Some(output)`, or `None` once `deadline` passed first (then `call` is
/// dropped unfinished, exactly as `tokio::time::timeout` drops it).
pub(crate) struct Bounded<'a, F> {
    call: Option<F>,
    deadline: Instant,
    /// Taken (or made) when the call is first found pending.
    timer: Option<Timer>,
    spares: &'a Spares,
    runtime: Id,
}

impl<'a, F: Future + Unpin> Bounded<'a, F> {
    /// Bounds `call` by `deadline` (on tokio's clock), on `runtime` (the caller's).
    pub(crate) fn new(call: F, deadline: Instant, spares: &'a Spares, runtime: Id) -> Self {
        Bounded {
            call: Some(call),
            deadline,
            timer: None,
            spares,
            runtime,
        }
    }

    /// The timer, the call's deadline set, taken from the spares if one is idle.
    fn timer(&mut self) -> Pin<&mut Sleep> {
        let (spares, runtime, deadline) = (self.spares, self.runtime, self.deadline);
        self.timer
            .get_or_insert_with(|| match spares.take(runtime) {
                Some(mut timer) => {
                    timer.as_mut().reset(deadline);
                    timer
                }
                None => Box::pin(tokio::time::sleep_until(deadline)),
            })
            .as_mut()
    }

    /// The call answered: its timer goes back to the spares, holding no waker of the caller.
    fn spare_timer(&mut self) {
        let Some(mut timer) = self.timer.take() else {
            return;
        };
        if !timer.is_elapsed() {
            // Replaces the caller's waker. Polled as every poll of the call polls it, in the
            // same context; should it panic all the same, the timer is dropped.
            let mut cx = Context::from_waker(Waker::noop());
            let mut unbudgeted = tokio::task::unconstrained(timer.as_mut());
            let polled = catch_unwind(AssertUnwindSafe(|| Pin::new(&mut unbudgeted).poll(&mut cx)));
            if polled.is_err() {
                return;
            }
        }
        self.spares.put(self.runtime, timer);
    }
}

impl<F: Future + Unpin> Future for Bounded<'_, F> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(call) = this.call.as_mut() else {
            return Poll::Ready(None);
        };
        if let Poll::Ready(answer) = Pin::new(call).poll(cx) {
            this.call = None;
            this.spare_timer();
            return Poll::Ready(Some(answer));
        }
        // Outside the task's budget, so that a call that spends it is still timed out.
        let mut timer = tokio::task::unconstrained(this.timer());
        if Pin::new(&mut timer).poll(cx).is_pending() {
            return Poll::Pending;
        }
        // Past the deadline: the call is dropped unfinished; its timer fired (no waker left).
        this.call = None;
        this.spare_timer();
        Poll::Ready(None)
    }
}

// The caller dropped the call before it answered: its timer, which holds the caller's waker,
// is dropped with it (out of the wheel), as `tokio::time::timeout`'s is.

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn runtime() -> Id {
        tokio::runtime::Handle::current().id()
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_that_answers_leaves_its_timer_for_the_next() {
        let spares = Spares::default();
        for _ in 0..3 {
            let call = Box::pin(async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                7
            });
            let deadline = Instant::now() + Duration::from_secs(1);
            let started = Instant::now();
            assert_eq!(
                Bounded::new(call, deadline, &spares, runtime()).await,
                Some(7)
            );
            assert!(started.elapsed() >= Duration::from_millis(5));
            assert!(started.elapsed() <= Duration::from_millis(6));
            assert_eq!(spares.len(), 1, "one timer, reused");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_reused_timer_still_bounds_the_call_at_its_own_deadline() {
        let spares = Spares::default();
        let quick = Box::pin(async { 1 });
        let deadline = Instant::now() + Duration::from_millis(50);
        // Ready at once: no timer needed.
        assert_eq!(
            Bounded::new(quick, deadline, &spares, runtime()).await,
            Some(1)
        );
        let slow = || Box::pin(tokio::time::sleep(Duration::from_secs(10)));
        let first = Instant::now() + Duration::from_millis(50);
        let short = Box::pin(tokio::time::sleep(Duration::from_millis(1)));
        assert!(
            Bounded::new(short, first, &spares, runtime())
                .await
                .is_some()
        );
        assert_eq!(spares.len(), 1);
        // The spare was set to `first`; this call's deadline is later, and holds.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let started = Instant::now();
        let deadline = started + Duration::from_millis(100);
        assert!(
            Bounded::new(slow(), deadline, &spares, runtime())
                .await
                .is_none()
        );
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(100),
            "not at the spare's old expiry: {waited:?}"
        );
        assert!(waited <= Duration::from_millis(101), "{waited:?}");
        // An earlier deadline than the spare's last one holds too.
        let started = Instant::now();
        let long = Box::pin(tokio::time::sleep(Duration::from_millis(1)));
        assert!(
            Bounded::new(long, started + Duration::from_secs(5), &spares, runtime())
                .await
                .is_some()
        );
        let started = Instant::now();
        assert!(
            Bounded::new(
                slow(),
                started + Duration::from_millis(10),
                &spares,
                runtime()
            )
            .await
            .is_none()
        );
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(10) && waited <= Duration::from_millis(11));
    }

    #[test]
    fn a_timer_of_another_runtime_is_not_reused() {
        let spares = Spares::default();
        let run = |spares: &Spares| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .unwrap();
            rt.block_on(async {
                let call = Box::pin(tokio::time::sleep(Duration::from_millis(1)));
                let deadline = Instant::now() + Duration::from_secs(1);
                assert!(
                    Bounded::new(call, deadline, spares, runtime())
                        .await
                        .is_some()
                );
                let slow = Box::pin(tokio::time::sleep(Duration::from_secs(10)));
                let started = Instant::now();
                let deadline = started + Duration::from_millis(30);
                assert!(
                    Bounded::new(slow, deadline, spares, runtime())
                        .await
                        .is_none()
                );
                let waited = started.elapsed();
                assert!(waited >= Duration::from_millis(30) && waited <= Duration::from_millis(31));
            });
        };
        run(&spares);
        // The first runtime is gone; its timer is dropped, not polled.
        run(&spares);
        assert_eq!(spares.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn many_calls_at_once_keep_a_few_timers() {
        let spares = Spares::default();
        let mut calls: Vec<_> = (1..=10)
            .map(|i| {
                let call = Box::pin(tokio::time::sleep(Duration::from_millis(i)));
                let deadline = Instant::now() + Duration::from_secs(1);
                Some(Bounded::new(call, deadline, &spares, runtime()))
            })
            .collect();
        let mut answered = 0;
        std::future::poll_fn(|cx| {
            for slot in &mut calls {
                let Some(call) = slot else { continue };
                if let Poll::Ready(answer) = Pin::new(call).poll(cx) {
                    assert!(answer.is_some());
                    answered += 1;
                    *slot = None;
                }
            }
            if calls.iter().all(Option::is_none) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        assert_eq!(answered, 10);
        assert_eq!(spares.len(), SPARES, "ten timers made, a few kept");
    }
}
