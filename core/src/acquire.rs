//! [`Acquire`]: the future of [`LockRegistry::acquire`](crate::LockRegistry::acquire).

use alloc::boxed::Box;
use alloc::sync::Arc;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use crate::error::LockError;
use crate::registry::{Lock, LockRegistry, Shard};
use crate::state::{Request, Standing};
use crate::time::Timestamp;
use crate::timer::Timer;
use crate::trace;

/// Waits for a lock: the future returned by [`LockRegistry::acquire`](crate::LockRegistry::acquire).
///
/// Waits without limit unless bounded with [`timeout`](Self::timeout). Resolves to
/// `Ok(Some(lock))` when granted, `Ok(None)` when a bounded wait elapsed first, or the
/// request's validation error. Dropping it before it resolves withdraws it from the queue
/// (cancel-safe). `Unpin`, `'static`, and `Send` when the clock and its sleeps are.
///
/// # Panics
/// Like any future, it must not be polled again once it returned `Ready`; doing so panics
/// with "`Acquire` polled after it resolved" (the lease was handed out already).
#[must_use = "futures do nothing unless polled; dropping this one withdraws the request"]
pub struct Acquire<C: Timer> {
    registry: LockRegistry<C>,
    /// The hash of the requested name, which picks its shard.
    hash: u64,
    /// The requested lease duration, which the granted handle keeps as its ttl.
    ttl: Duration,
    /// Whether a full registry was already swept once for this request.
    swept: bool,
    phase: Phase,
    /// The current sleep and the reading it ends at; replaced when that reading changes.
    sleep: Option<(Timestamp, Pin<Box<C::Sleep>>)>,
}

enum Phase {
    /// Not polled yet: the checked request (or why it was refused) and how long to wait.
    Start(Result<Request, LockError>, Duration),
    /// Queued as waiter `id` until `wait_deadline`.
    Queued { id: u64, wait_deadline: Timestamp },
    /// Resolved.
    Done,
}

impl<C: Timer> Acquire<C> {
    pub(crate) fn new(
        registry: LockRegistry<C>,
        request: Result<Request, LockError>,
        wait: Duration,
    ) -> Self {
        Acquire {
            registry,
            hash: request.as_ref().map_or(0, Request::hash),
            ttl: request.as_ref().map_or(Duration::ZERO, Request::ttl),
            swept: false,
            phase: Phase::Start(request, wait),
            sleep: None,
        }
    }

    /// Bounds the wait: the future resolves to `Ok(None)` once `wait` has elapsed without a
    /// grant (counted from the first poll). `timeout(Duration::ZERO)` answers exactly as
    /// [`try_lock`](crate::LockRegistry::try_lock) does. Once the future has been polled the
    /// wait is under way and this changes nothing.
    ///
    /// # Example
    /// ```
    /// use alkstore_mem::{LockRegistry, ManualClock};
    /// use core::time::Duration;
    ///
    /// let registry = LockRegistry::new(ManualClock::new());
    /// let _held = registry.try_lock("job", "a", Duration::from_secs(10))?.unwrap();
    /// let waited = registry.acquire("job", "b", Duration::from_secs(10)).timeout(Duration::ZERO);
    /// assert!(futures_lite::future::block_on(waited)?.is_none(), "busy, and no wait allowed");
    /// # Ok::<(), alkstore_mem::LockError>(())
    /// ```
    pub fn timeout(mut self, wait: Duration) -> Self {
        if let Phase::Start(_, bound) = &mut self.phase {
            *bound = wait;
        }
        self
    }

    fn shard(&self) -> &Arc<Shard<C>> {
        self.registry.shard(self.hash)
    }

    fn granted(&self, lease: crate::LeaseInfo, ttl: Duration) -> Lock<C> {
        Lock::new(Arc::clone(self.shard()), lease, ttl)
    }
}

impl<C: Timer> Future for Acquire<C> {
    type Output = Result<Option<Lock<C>>, LockError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        loop {
            // Read before the phase is taken apart: a clock that panics leaves it as it was.
            let reading = this.registry.clock().now();
            let (standing, later) = match core::mem::replace(&mut this.phase, Phase::Done) {
                Phase::Start(Err(err), _) => return Poll::Ready(Err(err)),
                Phase::Start(Ok(request), wait) => {
                    let (standing, later) = this
                        .shard()
                        .with_state_deferring(reading, |state, now, later| {
                            state.start(request, wait, now, later)
                        });
                    match standing {
                        // The shard was full even after sweeping itself; lapsed leases in
                        // other shards count too, so sweep them all once and try again.
                        Standing::Refused(LockError::CapacityExceeded { .. }, request)
                            if !this.swept && this.registry.sweep() > 0 =>
                        {
                            later.run();
                            this.swept = true;
                            this.phase = Phase::Start(Ok(request), wait);
                            continue;
                        }
                        standing => (standing, later),
                    }
                }
                Phase::Queued { id, wait_deadline } => {
                    this.phase = Phase::Queued { id, wait_deadline };
                    // Cloned before the shard's mutex: cloning a waker runs user code.
                    let waker = cx.waker().clone();
                    this.shard()
                        .with_state_deferring(reading, |state, now, later| {
                            state.poll_waiter(id, wait_deadline, now, waker, later)
                        })
                }
                Phase::Done => panic!("`Acquire` polled after it resolved"),
            };
            // What the call did is recorded in `this` before the deferred wake-ups run (user
            // code that may panic): a grant is already a `Lock`, whose drop passes it on, and
            // a queued waiter is already `Queued`, whose drop leaves the queue.
            let until = match standing {
                Standing::Granted(lease) => {
                    let how = match this.phase {
                        Phase::Queued { .. } => trace::How::HandedOff,
                        _ => trace::How::Directly,
                    };
                    this.phase = Phase::Done;
                    this.sleep = None;
                    let lock = this.granted(lease, this.ttl);
                    // After the handle exists: a subscriber that panics unwinds through
                    // its drop, which passes the lease on.
                    lock.traced_grant(how);
                    later.run();
                    return Poll::Ready(Ok(Some(lock)));
                }
                Standing::Busy | Standing::TimedOut => {
                    this.phase = Phase::Done;
                    this.sleep = None;
                    later.run();
                    return Poll::Ready(Ok(None));
                }
                Standing::Refused(err, _) => {
                    this.phase = Phase::Done;
                    later.run();
                    return Poll::Ready(Err(err));
                }
                Standing::Waiting { id, until } => {
                    if !matches!(this.phase, Phase::Queued { .. }) {
                        // Just queued: poll once more as a waiter, to register the waker.
                        this.phase = Phase::Queued {
                            id,
                            wait_deadline: until,
                        };
                        later.run();
                        continue;
                    }
                    later.run();
                    until
                }
            };
            if until == Timestamp::MAX {
                // Nothing to time: only a hand-off (which wakes us) can end this wait.
                this.sleep = None;
                return Poll::Pending;
            }
            let sleep = match &mut this.sleep {
                Some((at, sleep)) if *at == until => sleep,
                slot => {
                    let sleep = Box::pin(this.registry.clock().sleep_until(until));
                    &mut slot.insert((until, sleep)).1
                }
            };
            match sleep.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                // The sleep ended: look again (a timer may also end early; then sleep anew).
                Poll::Ready(()) => this.sleep = None,
            }
        }
    }
}

impl<C: Timer> Drop for Acquire<C> {
    fn drop(&mut self) {
        if let Phase::Queued { id, .. } = self.phase {
            self.shard()
                .with_state(|state, now, later| state.cancel(id, now, later));
        }
    }
}

impl<C: Timer> fmt::Debug for Acquire<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let phase = match &self.phase {
            Phase::Start(Ok(request), _) => alloc::format!("start({:?})", request.name()),
            Phase::Start(Err(_), _) => "refused".into(),
            Phase::Queued { id, .. } => alloc::format!("queued(#{id})"),
            Phase::Done => "done".into(),
        };
        f.debug_struct("Acquire")
            .field("phase", &phase)
            .field("sleeping_until", &self.sleep.as_ref().map(|s| s.0))
            .finish()
    }
}

impl<C: Timer> LockRegistry<C> {
    /// Waits for the lock `name`, then holds it for `ttl`: without limit, unless bounded
    /// with [`Acquire::timeout`].
    ///
    /// The future resolves to `Ok(Some(lock))` once granted, `Ok(None)` when a bounded wait
    /// elapses first. With `.timeout(Duration::ZERO)` it answers exactly as
    /// [`try_lock`](Self::try_lock) does.
    ///
    /// Waiters on a name are served in arrival order: a release (explicit or by drop) hands
    /// the lease straight to the head waiter, with a new token and a deadline `ttl` from the
    /// hand-over, and a `try_lock` arriving in between gets `None`. When the holder's lease
    /// lapses instead, the head waiter takes it when it wakes at that deadline. No polling:
    /// each waiter sleeps on the clock's [`Timer`] until its own wait deadline (the head
    /// waiter: or the holder's deadline, if earlier) and is woken early by a hand-off.
    ///
    /// Cancel-safe: dropping the future removes its waiter, and a lease already handed to it
    /// passes on to the next waiter or is freed. The future owns a clone of the registry, so
    /// it is `'static`, and it is `Send` when the clock and its sleeps are.
    ///
    /// # Errors
    /// The same as `try_lock`, at the first poll, without waiting: [`LockError::InvalidName`],
    /// [`LockError::ReservedName`], [`LockError::InvalidOwner`], [`LockError::InvalidTtl`],
    /// and [`LockError::CapacityExceeded`] when the name is free but the table is full.
    ///
    /// # Example
    /// ```
    /// use alkstore_mem::{LockRegistry, ManualClock};
    /// use core::pin::pin;
    /// use core::task::{Context, Poll, Waker};
    /// use core::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let registry = LockRegistry::new(clock.clone());
    /// let holder = registry.try_lock("job", "a", Duration::from_secs(10))?.unwrap();
    ///
    /// let ttl = Duration::from_secs(10);
    /// let mut waiting = pin!(registry.acquire("job", "b", ttl).timeout(Duration::from_secs(5)));
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert!(waiting.as_mut().poll(&mut cx).is_pending());
    ///
    /// holder.release(); // hands the lease straight to "b"
    /// let Poll::Ready(Ok(Some(lock))) = waiting.as_mut().poll(&mut cx) else { panic!() };
    /// assert_eq!(lock.owner(), "b");
    /// # Ok::<(), alkstore_mem::LockError>(())
    /// ```
    pub fn acquire(&self, name: &str, owner: &str, ttl: Duration) -> Acquire<C> {
        let request = self.request(name, owner, ttl);
        Acquire::new(self.clone(), request, Duration::MAX)
    }
}
