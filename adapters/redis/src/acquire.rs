//! [`RedisAcquire`]: waiting for a lock, FIFO across processes.
//!
//! # The waiting protocol
//! - A waiter first runs `acquire.lua`: if the name is free and nobody waits, it is granted
//!   at once; with no wait allowed (`timeout(Duration::ZERO)`) it answers busy; otherwise the
//!   waiter joins `{ns}:queue:<name>` (ordered by arrival) with an entry
//!   `{ns}:waiter:<id>` holding its owner, ttl, wait deadline and heartbeat expiry.
//! - Before it queues, the waiter registers with the store's pub/sub subscriber (without
//!   waiting for the subscription: once it listens, the subscriber wakes every registered
//!   sleeper to re-check, so nothing published in between is missed), so that the
//!   hand-off message cannot come before it listens.
//! - Whoever finds the lease released or lapsed (the release script, any `try_lock`, `holder`
//!   or waiter step) grants it inside that same script to the first live waiter and
//!   publishes the waiter's id. Nobody barges: a `try_lock` that meets a queue gets `None`.
//! - A waiter sleeps until that message, or the first of: the holder's deadline (only the
//!   first waiter: the lease may lapse with nobody to release it), its own wait deadline,
//!   and its heartbeat. Each wake-up is one more run of `acquire.lua`, which picks up a
//!   lease handed over, settles a lapsed one, refreshes the heartbeat, or ends the wait.
//!   There is no polling loop: a lost message is covered by those bounded re-checks.
//! - A crashed waiter stops refreshing its heartbeat; once three heartbeat periods pass (or
//!   its wait deadline), whoever settles the lock skips and deletes its entry.
//! - A bounded wait (`timeout(wait)`) counts from the future's first poll, on the local
//!   clock: the first step asks the server for what is left of it (the server keeps that as
//!   the wait deadline on its own clock, which a moved test clock also ends). Once `wait`
//!   has passed, no step starts but one, which picks up a lease handed over meanwhile or
//!   leaves the queue (a step in flight then may still bring a grant). Every step takes at
//!   most the `io_timeout`, and a step still unanswered at `wait + io_timeout` is given up
//!   (`Unavailable`): the future never resolves later than that after its first poll,
//!   however slowly Redis answers (a stalled first round trip no longer pushes the wait's
//!   end out).
//! - Dropping the future (or an error, or a step given up) runs `cancel.lua`: the entry
//!   leaves the queue, and a lease handed to it (or granted by a step given up) goes on to
//!   the next waiter. It runs in a task spawned on the current runtime, or, when there is no
//!   runtime or the runtime shuts down before that task ran, on a helper thread with a
//!   connection of its own, which the drop waits for (up to the `io_timeout`): the same
//!   fallback as a dropped [`RedisLock`]'s release. So a waiter dropped as its runtime shuts
//!   down does not stay in line to be handed a lease nobody picks up.

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
use crate::lock::RedisLock;
use crate::scripts::SCRIPTS;
use crate::store::{Anchor, RedisLocks, ToRedisArgsDyn, field, from_us, micros, unavailable};

/// Waits for a lock: the future of [`RedisLocks::acquire`].
///
/// Resolves to `Ok(Some(lock))` once granted, `Ok(None)` when a bounded wait elapsed first,
/// the request's validation error, or [`LockError::Unavailable`]. Dropping it withdraws the
/// request (cancel-safe; the withdrawal runs in a spawned task, or on a helper thread when
/// there is no runtime or the runtime shuts down first, as a dropped [`RedisLock`]'s
/// release does). `Send` and `'static`.
#[must_use = "futures do nothing unless polled; dropping this one withdraws the request"]
pub struct RedisAcquire(PendingAcquire<RedisLocks, RedisLock>);

impl RedisAcquire {
    pub(crate) fn new(
        store: RedisLocks,
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
        RedisAcquire(PendingAcquire::new(request, checked, start, "RedisAcquire"))
    }

    /// Bounds the wait: the future resolves to `Ok(None)` once `wait` has elapsed without a
    /// grant, counted from its first poll. A step that reached Redis in time may still bring
    /// a grant a little later, but the future never resolves later than `wait` plus the
    /// [`io_timeout`](crate::RedisConfig::io_timeout) after its first poll, however slowly
    /// Redis answers: if Redis has not answered by then, it resolves to
    /// [`LockError::Unavailable`]. `timeout(Duration::ZERO)` answers exactly as
    /// [`RedisLocks::try_lock`] does. Once the future has been polled this changes nothing.
    pub fn timeout(mut self, wait: Duration) -> Self {
        self.0.set_timeout(wait);
        self
    }
}

impl Future for RedisAcquire {
    type Output = Result<Option<RedisLock>, LockError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl fmt::Debug for RedisAcquire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Starts waiting for `request`, at the future's first poll.
fn start(
    request: AcquireRequest<RedisLocks>,
) -> BoxedFuture<'static, Result<Option<RedisLock>, LockError>> {
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

/// A process-unique, unguessable id for a waiter.
pub(crate) fn new_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let random = RandomState::new().hash_one(n);
    format!("{random:016x}{:08x}{n:x}", std::process::id())
}

/// Withdraws a waiter when the wait ends without a grant picked up (dropped, failed, or
/// its bound passed while a step was in flight).
struct CancelGuard {
    store: RedisLocks,
    name: String,
    id: String,
    armed: bool,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if self.armed {
            // In a task on the current runtime, or on a helper thread when there is none or
            // it shuts down first (the same mechanism as a dropped lock's release).
            Cleanup::withdraw(&self.store, &self.name, &self.id).launch();
        }
    }
}

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
}

async fn wait_for(
    store: RedisLocks,
    name: String,
    owner: String,
    ttl: Duration,
    wait: Option<Duration>,
    started: Instant,
) -> Result<Option<RedisLock>, LockError> {
    let id = new_id();
    let config = &store.inner.config;
    let heartbeat = config.waiter_heartbeat();
    let bounds = Bounds::new(started, wait, config.io_timeout());
    // A zero wait never queues, so it needs no subscription.
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
    };
    let ttl_us = micros(ttl);
    let hb_us = micros(heartbeat * 3);
    // The wait deadline on the server's lease clock ('' before the first step answered).
    let mut wd = String::new();
    loop {
        let sent = Instant::now();
        // What is left of the wait (only the first step uses it: the server's wait deadline
        // is its own clock then plus this, which a moved test clock also ends).
        let wait_us: i64 = wait.map_or(-1, |w| {
            let left = w.saturating_sub(sent.saturating_duration_since(started));
            i64::try_from(micros(left)).unwrap_or(i64::MAX)
        });
        // Past the local end, the step ends the wait whatever the server's clock says.
        let wd_arg = if !wd.is_empty() && bounds.over(sent) {
            "end"
        } else {
            wd.as_str()
        };
        let args: [&dyn ToRedisArgsDyn; 6] = [&owner, &ttl_us, &id, &wait_us, &wd_arg, &hb_us];
        let step = store.run::<Vec<String>>(&SCRIPTS.acquire, &name, &args);
        let reply = match bounds.limit {
            None => step.await?,
            Some(limit) => match tokio::time::timeout_at(limit.into(), step).await {
                Ok(reply) => reply?,
                // The wait and one io_timeout have passed, and Redis has not answered (as a
                // step's own io_timeout would say; the guard withdraws the entry).
                Err(_) => {
                    let io = config.io_timeout();
                    return Err(unavailable(format!(
                        "redis did not answer within {io:?} (a bounded wait ends by its wait plus that)"
                    )));
                }
            },
        };
        let now = Anchor::new(field(&reply, 3)?, sent);
        match reply.first().map(String::as_str) {
            Some("1") => {
                let (token, deadline) = (field(&reply, 1)?, field(&reply, 2)?);
                guard.armed = false;
                // Handed off when it had to wait (a first step that is granted took it free).
                let handed_off = !wd.is_empty();
                let lock = RedisLock::new(
                    store.clone(),
                    &name,
                    &owner,
                    token,
                    from_us(deadline),
                    ttl,
                    now,
                );
                // After the handle exists: a subscriber that panics unwinds through its
                // drop, which releases the lease.
                alkstore_mem::events::granted(&name, &owner, token, from_us(deadline), handed_off);
                return Ok(Some(lock));
            }
            Some("2") => {
                guard.armed = false;
                return Ok(None);
            }
            // An "end" step never answers "queued"; if one did, the guard withdraws it.
            _ if wd_arg == "end" => return Ok(None),
            _ => {}
        }
        let wait_deadline = field(&reply, 1)?;
        let head_holder = field(&reply, 2)?;
        wd = wait_deadline.to_string();
        if bounds.over(Instant::now()) {
            // The step in flight at the end said "queued": one last step, at once.
            continue;
        }
        let mut pause = heartbeat;
        if wait_deadline != 0 {
            pause = pause.min(now.until(from_us(wait_deadline)));
        }
        if head_holder != 0 {
            pause = pause.min(now.until(from_us(head_holder)));
        }
        if let Some(end) = bounds.end {
            pause = pause.min(end.saturating_duration_since(Instant::now()));
        }
        // Wake just after the deadline, not just before it.
        let pause = pause + Duration::from_millis(1);
        match &wake {
            Some(wake) => tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = wake.notified() => {}
            },
            None => tokio::time::sleep(pause).await,
        }
    }
}
