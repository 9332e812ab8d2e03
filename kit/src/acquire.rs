//! [`Acquire`]: waiting for a lock, FIFO across processes, written once for every engine
//! (the waiting protocol is described on [`Acquire`]).

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

use alkstore_mem::contract::{AcquireRequest, PendingAcquire};
use alkstore_mem::{BoxedFuture, LockError};

use crate::anchor::Anchor;
use crate::cleanup::{Cleanup, Undo};
use crate::lock::Lock;
use crate::protocol::{Protocol, Settings, Step, StepReply, WaitDeadline};
use crate::store::Locks;

/// Waits for a lock: the future of [`Locks::acquire`] (what `RedisAcquire`, `PgAcquire` and
/// `SqliteAcquire` are).
///
/// Resolves to `Ok(Some(lock))` once granted, `Ok(None)` when a bounded wait elapsed first,
/// the request's validation error, or [`LockError::Unavailable`]. Dropping it withdraws the
/// request (cancel-safe: see below). `Send` and `'static`.
///
/// # The waiting protocol
/// - Each step is one [`Protocol::step`]: if the name is free and nobody waits, it is granted
///   at once; with no wait allowed (`timeout(Duration::ZERO)`) it answers busy; otherwise the
///   waiter joins the name's queue (in arrival order) with an entry holding its owner, ttl,
///   wait deadline and heartbeat expiry.
/// - Before it queues, the waiter registers for wake-ups (without waiting for the
///   subscription: once it listens, the listener wakes every registered sleeper to re-check,
///   so nothing published in between is missed).
/// - Whoever finds the lease released or lapsed grants it, inside that same operation, to the
///   first live waiter and wakes it. Nobody barges: a `try_lock` that meets a queue gets
///   `None`.
/// - A waiter sleeps until woken, or the first of: the holder's deadline (only the first
///   waiter: the lease may lapse with nobody to release it), its own wait deadline, and its
///   heartbeat. Each wake-up is one more step. A crashed waiter stops refreshing its
///   heartbeat; once three heartbeat periods pass, whoever settles the lock skips it.
/// - A bounded wait counts from the future's first poll, on tokio's clock (the local clock,
///   or tokio's paused test clock, on which the kit also sleeps); the first step
///   hands the engine what is left of it. Once `wait` has passed, no step starts but one,
///   which picks up a lease handed over meanwhile or leaves the queue. A step still
///   unanswered at `wait + io_timeout` is given up (`Unavailable`), as is any step unanswered
///   within the `io_timeout`; the step runs on in its task, and the waiter is withdrawn as
///   when the future is dropped (below), so an `Unavailable` never leaves an entry or a
///   lease behind.
/// - Dropping the future (or an error) withdraws the waiter: its entry leaves the queue, and
///   a lease handed to it goes on to the next waiter. A step in flight runs on in its task and
///   withdraws the waiter again once it has answered (so a step that runs after the first
///   withdrawal cannot leave a grant or an entry behind). Withdrawals that fail (the engine
///   frozen or busy) are retried in the background, within bounds.
#[must_use = "futures do nothing unless polled; dropping this one withdraws the request"]
pub struct Acquire<P: Protocol>(PendingAcquire<Locks<P>, Lock<P>>);

impl<P: Protocol> Acquire<P> {
    pub(crate) fn new(
        store: Locks<P>,
        name: &str,
        owner: &str,
        ttl: Duration,
        checked: Result<(), LockError>,
    ) -> Self {
        let request = AcquireRequest {
            store,
            name: name.into(),
            owner: owner.into(),
            ttl,
            wait: None,
        };
        Acquire(PendingAcquire::new(request, checked, start::<P>, "Acquire"))
    }

    /// Bounds the wait: the future resolves to `Ok(None)` once `wait` has elapsed without a
    /// grant, counted from its first poll. A step that reached the engine in time may still
    /// bring a grant a little later, but the future never resolves later than `wait` plus
    /// the `io_timeout` after its first poll, however slowly the engine answers: if it has not
    /// answered by then, it resolves to [`LockError::Unavailable`].
    /// `timeout(Duration::ZERO)` answers exactly as [`Locks::try_lock`] does. Once the future
    /// has been polled this changes nothing.
    pub fn timeout(mut self, wait: Duration) -> Self {
        self.0.set_timeout(wait);
        self
    }
}

impl<P: Protocol> Future for Acquire<P> {
    type Output = Result<Option<Lock<P>>, LockError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl<P: Protocol> fmt::Debug for Acquire<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Starts waiting for `request`, at the future's first poll.
fn start<P: Protocol>(
    request: AcquireRequest<Locks<P>>,
) -> BoxedFuture<'static, Result<Option<Lock<P>>, LockError>> {
    // The wait counts from here, the first poll.
    BoxedFuture::new(wait_for(request, Instant::now()))
}

/// Withdraws a waiter when the wait ends without a grant picked up (dropped, failed, or its
/// bound passed while a step was in flight).
struct CancelGuard<P: Protocol> {
    store: Locks<P>,
    name: String,
    id: String,
    armed: bool,
    /// A step was sent and not answered: it may still run on the engine after the
    /// withdrawal, which must then leave its mark.
    unanswered: bool,
}

impl<P: Protocol> Drop for CancelGuard<P> {
    fn drop(&mut self) {
        if self.armed {
            Cleanup::withdraw(&self.store, &self.name, &self.id, self.unanswered).launch();
        }
    }
}

/// How long a step that found the row locked by somebody's transaction waits before the next.
const LOCKED_PAUSE: Duration = Duration::from_millis(50);

/// The bounds of a wait, on the local clock, counted from the future's first poll.
#[derive(Clone, Copy)]
struct Bounds {
    /// When the wait is over: no step starts after this but the last one. `None`: no bound.
    end: Option<Instant>,
    /// When the future resolves at the latest (`end` plus one `io_timeout`).
    limit: Option<Instant>,
}

impl Bounds {
    fn new(started: Instant, wait: Option<Duration>, io_timeout: Duration) -> Self {
        let end = wait.and_then(|w| started.checked_add(w));
        Bounds {
            end,
            limit: end.and_then(|end| end.checked_add(io_timeout)),
        }
    }

    /// Whether the wait is over at `at`.
    fn over(&self, at: Instant) -> bool {
        self.end.is_some_and(|end| at >= end)
    }

    /// How long until the end, from now (`None`: no bound).
    fn left(&self) -> Option<Duration> {
        self.end
            .map(|end| end.saturating_duration_since(Instant::now()))
    }
}

/// Runs one step in a task of its own; the answer comes with an [`Undo`] that withdraws the
/// waiter if nobody takes the answer (the caller went away meanwhile).
async fn step<P: Protocol>(
    store: &Locks<P>,
    request: &AcquireRequest<Locks<P>>,
    id: &str,
    wait_left: Option<Duration>,
    deadline: WaitDeadline,
) -> Result<(StepReply, Undo<P>), LockError> {
    let (st, name, owner, id) = (
        store.clone(),
        request.name.clone(),
        request.owner.clone(),
        id.to_owned(),
    );
    let ttl = request.ttl;
    // Three heartbeats (each at most 60 s, clamped by the config).
    let heartbeat_expiry = store.config().waiter_heartbeat() * 3;
    store
        .call(&request.name, async move {
            let undo = Undo::new(Cleanup::withdraw(&st, &name, &id, true));
            let reply = st
                .shared
                .engine
                .step(Step {
                    name: &name,
                    owner: &owner,
                    ttl,
                    id: &id,
                    wait_left,
                    deadline,
                    heartbeat_expiry,
                })
                .await?;
            Ok((reply, undo))
        })
        .await
}

async fn wait_for<P: Protocol>(
    request: AcquireRequest<Locks<P>>,
    started: Instant,
) -> Result<Option<Lock<P>>, LockError> {
    // Its timers need a runtime: without one, refuse as every call does.
    crate::call::need_runtime(P::NAME)?;
    let store = request.store.clone();
    let id = crate::new_id();
    let config = store.config();
    let (heartbeat, io) = (config.waiter_heartbeat(), config.io_timeout());
    let wait = request.wait;
    let bounds = Bounds::new(started, wait, io);
    // A zero wait never queues, so it needs no wake-ups.
    let wake = (wait != Some(Duration::ZERO)).then(|| store.register(id.clone()));
    let mut guard = CancelGuard {
        store: store.clone(),
        name: request.name.clone(),
        id: id.clone(),
        armed: true,
        unanswered: false,
    };
    // The engine's wait deadline (unknown before the first step answered).
    let mut known: Option<Option<alkstore_mem::Timestamp>> = None;
    loop {
        let sent = Instant::now();
        // What is left of the wait (only the first step uses it).
        let wait_left = wait.map(|w| w.saturating_sub(sent.saturating_duration_since(started)));
        // Past the local end, the step ends the wait whatever the engine's clock says.
        let deadline = match known {
            None => WaitDeadline::First,
            Some(_) if bounds.over(sent) => WaitDeadline::Over,
            Some(at) => WaitDeadline::Known(at),
        };
        guard.unanswered = true;
        let call = step(&store, &request, &id, wait_left, deadline);
        let answer = match bounds.limit {
            None => call.await,
            Some(limit) => match tokio::time::timeout_at(limit, call).await {
                Ok(answer) => answer,
                // The wait and one io_timeout have passed, and the engine has not answered
                // (the guard withdraws the entry; the step's task does again when it ends).
                Err(_) => {
                    return Err(crate::unavailable(format!(
                        "{} did not answer within the io_timeout of {io:?} (a bounded wait \
                         ends by its wait plus that)",
                        P::NAME
                    )));
                }
            },
        };
        let (reply, undo) = answer?;
        // The answer is ours: the guard withdraws from here on if need be.
        undo.disarm();
        guard.unanswered = false;
        let pause = match reply {
            StepReply::Locked => {
                if bounds.over(Instant::now()) {
                    return Ok(None);
                }
                bounds
                    .left()
                    .map_or(LOCKED_PAUSE, |left| LOCKED_PAUSE.min(left))
            }
            StepReply::Granted(reply) => {
                guard.armed = false;
                let anchor = Anchor::new(reply.now, sent);
                let AcquireRequest {
                    name, owner, ttl, ..
                } = request;
                let lock = Lock::new(store, name, owner, reply.value, ttl, anchor);
                // After the handle exists: a subscriber that panics unwinds through its drop,
                // which releases the lease. Handed off when it had to wait.
                let handed_off = known.is_some();
                alkstore_mem::events::granted(
                    lock.name(),
                    lock.owner(),
                    lock.token(),
                    lock.deadline(),
                    handed_off,
                );
                return Ok(Some(lock));
            }
            StepReply::Over => {
                guard.armed = false;
                return Ok(None);
            }
            // A step that ends the wait never answers "queued"; if one did, the guard
            // withdraws it.
            StepReply::Queued { .. } if deadline == WaitDeadline::Over => return Ok(None),
            StepReply::Queued {
                wait_deadline,
                head_holder,
                now,
            } => {
                known = Some(wait_deadline);
                if bounds.over(Instant::now()) {
                    // The step in flight at the end said "queued": one last step, at once.
                    continue;
                }
                // A deadline the engine's own clock has passed already tells nothing to wait
                // for (the step settles lapsed leases and ends waits that are over): one in
                // the past would only make the waiter step again at once, for as long as the
                // engine says so. It sleeps its heartbeat instead (or until woken).
                let ahead = |at: Option<alkstore_mem::Timestamp>| at.filter(|at| *at > now);
                let now = Anchor::new(now, sent);
                let mut pause = heartbeat;
                if let Some(at) = ahead(wait_deadline) {
                    pause = pause.min(now.until(at));
                }
                if let Some(holder) = ahead(head_holder) {
                    pause = pause.min(now.until(holder));
                }
                if let Some(left) = bounds.left() {
                    pause = pause.min(left);
                }
                // Wake just after the deadline, not just before it.
                pause + Duration::from_millis(1)
            }
        };
        match &wake {
            Some(wake) => tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = wake.notified() => {}
            },
            None => tokio::time::sleep(pause).await,
        }
    }
}
