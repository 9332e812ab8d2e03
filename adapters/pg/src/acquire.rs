//! [`PgAcquire`]: waiting for a lock, FIFO across processes.
//!
//! # The waiting protocol
//! - A waiter runs `acquire()` steps on the server. The first grants at once when the name
//!   is free and nobody waits; with no wait allowed (`timeout(Duration::ZERO)`) it answers
//!   busy; otherwise it queues the waiter in `<schema>.waiters` (ordered by a sequence) with
//!   its owner, ttl, wait deadline and heartbeat expiry.
//! - Before it queues, the waiter registers with the store's listening connection (without
//!   waiting for the `LISTEN`: once it listens, every registered sleeper re-checks), so that
//!   the hand-off notification cannot come before it listens.
//! - Whoever finds the lease released or lapsed (release, any `try_lock`, `holder` or waiter
//!   step) grants it, in that same transaction, to the first live waiter, and notifies the
//!   waiter's id (delivered at commit). Nobody barges: a `try_lock` that meets a queue gets
//!   `None`.
//! - A waiter sleeps until that notification, or the first of: the holder's deadline (only
//!   the first waiter: the lease may lapse with nobody to release it), its own wait
//!   deadline, and its heartbeat. Each wake-up is one more step, which picks up a lease
//!   handed over, settles a lapsed one, refreshes the heartbeat, or ends the wait. A lost
//!   notification is covered by those bounded re-checks. There is no polling loop.
//! - A transaction holding `fence()` on the name does not hold a step up: the step takes the
//!   lease row `FOR NO KEY UPDATE`, which the fence's `FOR KEY SHARE` does not block, so the
//!   waiter queues (in arrival order) and refreshes its heartbeat while the fenced
//!   transaction is open. Only grants and hand-offs wait for that transaction to end. A
//!   hand-off held up that way (the lease was released or lapsed meanwhile) is made by
//!   whoever settles the name first once the transaction has ended: a release, a
//!   `try_lock`, `holder`, or the first waiter's own next step, at the latest one
//!   heartbeat later (the end of a user's transaction sends no notification).
//! - A crashed waiter stops refreshing its heartbeat; once three heartbeat periods pass (or
//!   its wait deadline), whoever settles the name skips and deletes its entry.
//! - A bounded wait (`timeout(wait)`) counts from the future's first poll, on the local
//!   clock: the first step sends what is left of it (the server keeps that as the wait
//!   deadline on its own clock, which a moved test clock also ends). Once `wait` has
//!   passed, no step starts but one, which picks up a lease handed over meanwhile or leaves
//!   the queue (a step in flight then may still bring a grant). Every step takes at most the
//!   `io_timeout`, and a step still unanswered at `wait + io_timeout` is given up
//!   (`Unavailable`): the future never resolves later than that after its first poll.
//! - Dropping the future (or an error, or a step given up) runs `cancel()`: the entry leaves
//!   the queue, and a lease that went to it (handed over, or granted by a step whose reply
//!   never arrived) is freed and passed on to the next waiter. If a step was in flight (sent,
//!   not answered), it may reach the server after the withdrawal (on another connection, or
//!   pipelined behind slow calls): `cancel()` then leaves a mark under the lease row's lock,
//!   and that step, checking for it under the same lock, neither grants nor queues. The
//!   withdrawal runs in a task spawned on the current runtime, or, when there is none or the
//!   runtime shuts down before that task ran, on a helper thread with a connection of its
//!   own, which the drop waits for (up to the `io_timeout`): the same fallback as a dropped
//!   [`PgLock`]'s release. So a waiter dropped as its runtime shuts down does not stay in
//!   line to be handed a lease nobody picks up.

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use alkstore_mem::contract::{AcquireRequest, PendingAcquire};
use alkstore_mem::{BoxedFuture, LockError};

use crate::cleanup::Cleanup;
use crate::lock::PgLock;
use crate::pool::{Fail, Op, unavailable};
use crate::store::PgLocks;
use crate::wire::{Anchor, field, from_us, micros, numbers, owner_to_sql};

/// Waits for a lock: the future of [`PgLocks::acquire`].
///
/// Resolves to `Ok(Some(lock))` once granted, `Ok(None)` when a bounded wait elapsed first,
/// the request's validation error, or [`LockError::Unavailable`]. Dropping it withdraws the
/// request (cancel-safe, also while a step is in flight: that step then neither grants nor
/// queues; the withdrawal runs in a spawned task, or on a helper thread when there is no
/// runtime or the runtime shuts down first, as a dropped [`PgLock`]'s release does). `Send`
/// and `'static`.
#[must_use = "futures do nothing unless polled; dropping this one withdraws the request"]
pub struct PgAcquire(PendingAcquire<PgLocks, PgLock>);

impl PgAcquire {
    pub(crate) fn new(
        store: PgLocks,
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
        PgAcquire(PendingAcquire::new(request, checked, start, "PgAcquire"))
    }

    /// Bounds the wait: the future resolves to `Ok(None)` once `wait` has elapsed without a
    /// grant, counted from its first poll. A step that reached the server in time may still
    /// bring a grant a little later, but the future never resolves later than `wait` plus
    /// the [`io_timeout`](crate::PgConfig::io_timeout) after its first poll, however slowly
    /// the server answers: if it has not answered by then, it resolves to
    /// [`LockError::Unavailable`]. `timeout(Duration::ZERO)` answers exactly as
    /// [`PgLocks::try_lock`] does. Once the future has been polled this changes nothing.
    ///
    /// # Example
    /// ```no_run
    /// # use std::time::Duration;
    /// # async fn run(locks: alkstore_pg::PgLocks) -> Result<(), alkstore_mem::LockError> {
    /// let waited = locks
    ///     .acquire("nightly", "host-1", Duration::from_secs(60))
    ///     .timeout(Duration::from_secs(2))
    ///     .await?;
    /// # drop(waited);
    /// # Ok(())
    /// # }
    /// ```
    pub fn timeout(mut self, wait: Duration) -> Self {
        self.0.set_timeout(wait);
        self
    }
}

impl Future for PgAcquire {
    type Output = Result<Option<PgLock>, LockError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl fmt::Debug for PgAcquire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Starts waiting for `request`, at the future's first poll.
fn start(
    request: AcquireRequest<PgLocks>,
) -> BoxedFuture<'static, Result<Option<PgLock>, LockError>> {
    let AcquireRequest {
        store,
        name,
        owner,
        ttl,
        wait,
    } = request;
    // The wait counts from here, the first poll.
    BoxedFuture::new(wait_for(store, name, owner, ttl, wait, Instant::now()))
}

/// A process-unique, unguessable id for a request or a waiter.
pub(crate) fn new_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let random = RandomState::new().hash_one(n);
    format!("{random:016x}{:08x}{n:x}", std::process::id())
}

/// Withdraws a waiter when the wait ends without a grant picked up (dropped, failed, or its
/// bound passed while a step was in flight).
struct CancelGuard {
    store: PgLocks,
    name: String,
    id: String,
    armed: bool,
    /// A step was sent and not answered: it may still run on the server, after the
    /// withdrawal, which must then leave its mark.
    unanswered: bool,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if self.armed {
            // In a task on the current runtime, or on a helper thread when there is none or
            // it shuts down first (the same mechanism as a dropped lock's release).
            Cleanup::withdraw(&self.store, &self.name, &self.id, self.unanswered).launch();
        }
    }
}

/// How long a step that found the row locked (SQLSTATE 55P03: a user's transaction holding
/// it in a mode that blocks the queue, which `fence()` does not) waits before the next.
const LOCKED_PAUSE: Duration = Duration::from_millis(50);

/// `wd` of a step whose wait is over by the client's bound: the server ends the wait.
const WAIT_OVER: i64 = -2;

/// The bounds of a wait, on the local clock, counted from the future's first poll.
#[derive(Clone, Copy)]
struct Bounds {
    /// When the wait is over: no step starts after this but the last one, which picks up a
    /// lease handed over meanwhile or leaves the queue. `None`: no bound.
    end: Option<Instant>,
    /// When the future resolves at the latest (`end` plus one `io_timeout`, which is all
    /// the step in flight at `end`, or the last one, may take): a step still unanswered then
    /// is given up, and the wait ends with `LockError::Unavailable`.
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

async fn wait_for(
    store: PgLocks,
    name: String,
    owner: String,
    ttl: Duration,
    wait: Option<Duration>,
    started: Instant,
) -> Result<Option<PgLock>, LockError> {
    let id = new_id();
    let config = &store.inner.config;
    let heartbeat = config.waiter_heartbeat();
    let io = config.io_timeout();
    let bounds = Bounds::new(started, wait, io);
    // A zero wait never queues, so it needs no wake-ups.
    let wake = if wait == Some(Duration::ZERO) {
        None
    } else {
        Some(store.inner.wake.register(id.clone()))
    };
    let mut guard = CancelGuard {
        store: store.clone(),
        name: name.clone(),
        id: id.clone(),
        armed: true,
        unanswered: false,
    };
    // The heartbeat is at most 60 s (clamped by the config): three of them fit.
    let (ttl_us, hb_us) = (micros(ttl), micros(heartbeat * 3));
    let stored_owner = owner_to_sql(&owner);
    // The wait deadline on the server's lease clock (-1 before the first step answered).
    let mut wd: i64 = -1;
    loop {
        let sent = Instant::now();
        // What is left of the wait (only the first step uses it).
        let wait_us: i64 = wait.map_or(-1, |w| {
            micros(w.saturating_sub(sent.saturating_duration_since(started)))
        });
        // Past the local end, the step ends the wait whatever the server's clock says.
        let wd_arg = if wd != -1 && bounds.over(sent) {
            WAIT_OVER
        } else {
            wd
        };
        guard.unanswered = true;
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 7] = [
            &name,
            &stored_owner,
            &ttl_us,
            &id,
            &wait_us,
            &wd_arg,
            &hb_us,
        ];
        let step = store.call(Op::Acquire, &params);
        let step = match bounds.limit {
            None => step.await,
            Some(limit) => match tokio::time::timeout_at(limit.into(), step).await {
                Ok(step) => step,
                // The wait and one io_timeout have passed, and the server has not answered
                // (as a step's own io_timeout would say; the guard withdraws the entry).
                Err(_) => {
                    return Err(unavailable(format!(
                        "postgres did not answer within the io_timeout of {io:?} (a bounded \
                         wait ends by its wait plus that)"
                    )));
                }
            },
        };
        let pause = match step {
            Err(Fail::Locked) => {
                // The statement failed on the server: nothing of it runs later.
                guard.unanswered = false;
                if bounds.over(Instant::now()) {
                    return Ok(None);
                }
                bounds
                    .left()
                    .map_or(LOCKED_PAUSE, |left| LOCKED_PAUSE.min(left))
            }
            Err(Fail::Down(err)) => return Err(err),
            Ok(rows) => {
                guard.unanswered = false;
                let reply = numbers(&rows)?;
                let now = Anchor::new(field(&reply, 3)?, sent);
                match field(&reply, 0)? {
                    1 => {
                        let (token, deadline) = (field(&reply, 1)?, field(&reply, 2)?);
                        guard.armed = false;
                        let lock = PgLock::new(
                            store.clone(),
                            &name,
                            &owner,
                            u64::try_from(token).unwrap_or(0),
                            from_us(deadline),
                            ttl,
                            now,
                        );
                        // After the handle exists: a subscriber that panics unwinds through
                        // its drop, which releases the lease.
                        let (at, handed_off) = (lock.deadline(), wd != -1);
                        alkstore_mem::events::granted(&name, &owner, lock.token(), at, handed_off);
                        return Ok(Some(lock));
                    }
                    2 => {
                        guard.armed = false;
                        return Ok(None);
                    }
                    // A step that ends the wait never answers "queued"; if one did, the
                    // guard withdraws it.
                    _ if wd_arg == WAIT_OVER => return Ok(None),
                    _ => {}
                }
                wd = field(&reply, 1)?;
                let head_holder = field(&reply, 2)?;
                if bounds.over(Instant::now()) {
                    // The step in flight at the end said "queued": one last step, at once.
                    continue;
                }
                let mut pause = heartbeat;
                if wd != 0 {
                    pause = pause.min(now.until(from_us(wd)));
                }
                if head_holder != 0 {
                    pause = pause.min(now.until(from_us(head_holder)));
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
