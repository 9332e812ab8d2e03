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
//! - Dropping the future (or an error) runs `cancel.lua` in a spawned task: the entry leaves
//!   the queue, and a lease handed to it but not yet picked up goes on to the next waiter.

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use alkstore_mem::LockError;

use crate::lock::RedisLock;
use crate::scripts::SCRIPTS;
use crate::store::{Anchor, RedisLocks, field, from_us, micros};

/// Waits for a lock: the future of [`RedisLocks::acquire`].
///
/// Resolves to `Ok(Some(lock))` once granted, `Ok(None)` when a bounded wait elapsed first,
/// the request's validation error, or [`LockError::Unavailable`]. Dropping it withdraws the
/// request (cancel-safe; the withdrawal runs in a spawned task). `Send` and `'static`.
#[must_use = "futures do nothing unless polled; dropping this one withdraws the request"]
pub struct RedisAcquire {
    state: State,
}

type Waiting = Pin<Box<dyn Future<Output = Result<Option<RedisLock>, LockError>> + Send>>;

enum State {
    Start {
        store: RedisLocks,
        name: String,
        owner: String,
        ttl: Duration,
        wait: Option<Duration>,
        checked: Result<(), LockError>,
    },
    Waiting(Waiting),
    Done,
}

impl RedisAcquire {
    pub(crate) fn new(
        store: RedisLocks,
        name: &str,
        owner: &str,
        ttl: Duration,
        checked: Result<(), LockError>,
    ) -> Self {
        RedisAcquire {
            state: State::Start {
                store,
                name: name.into(),
                owner: owner.into(),
                ttl,
                wait: None,
                checked,
            },
        }
    }

    /// Bounds the wait: the future resolves to `Ok(None)` once `wait` has elapsed on the
    /// server's clock without a grant (counted from the first poll).
    /// `timeout(Duration::ZERO)` answers exactly as [`RedisLocks::try_lock`] does. Once the
    /// future has been polled this changes nothing.
    pub fn timeout(mut self, wait: Duration) -> Self {
        if let State::Start { wait: bound, .. } = &mut self.state {
            *bound = Some(wait);
        }
        self
    }
}

impl Future for RedisAcquire {
    type Output = Result<Option<RedisLock>, LockError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let State::Start { .. } = self.state {
            let State::Start {
                store,
                name,
                owner,
                ttl,
                wait,
                checked,
            } = std::mem::replace(&mut self.state, State::Done)
            else {
                unreachable!()
            };
            if let Err(err) = checked {
                return Poll::Ready(Err(err));
            }
            self.state = State::Waiting(Box::pin(wait_for(store, name, owner, ttl, wait)));
        }
        match &mut self.state {
            State::Waiting(fut) => {
                let out = fut.as_mut().poll(cx);
                if out.is_ready() {
                    self.state = State::Done;
                }
                out
            }
            State::Start { .. } | State::Done => Poll::Ready(Err(LockError::Unavailable {
                reason: "RedisAcquire polled after it resolved".into(),
            })),
        }
    }
}

impl fmt::Debug for RedisAcquire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Start { .. } => "start",
            State::Waiting(_) => "waiting",
            State::Done => "done",
        };
        f.debug_struct("RedisAcquire")
            .field("state", &state)
            .finish()
    }
}

/// A process-unique, unguessable id for a waiter.
pub(crate) fn new_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let random = RandomState::new().hash_one(n);
    format!("{random:016x}{:08x}{n:x}", std::process::id())
}

/// Withdraws a waiter when the wait ends without a grant picked up (dropped or failed).
struct CancelGuard {
    store: RedisLocks,
    name: String,
    id: String,
    armed: bool,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let store = self.store.clone();
            let name = std::mem::take(&mut self.name);
            let id = std::mem::take(&mut self.id);
            runtime.spawn(async move {
                // Best effort: an entry left behind is skipped once its heartbeat expires.
                let _ = store.run::<String>(&SCRIPTS.cancel, &name, &[&id]).await;
            });
        }
    }
}

async fn wait_for(
    store: RedisLocks,
    name: String,
    owner: String,
    ttl: Duration,
    wait: Option<Duration>,
) -> Result<Option<RedisLock>, LockError> {
    let id = new_id();
    let heartbeat = store.inner.config.waiter_heartbeat();
    let wait_us: i64 = wait.map_or(-1, |w| i64::try_from(micros(w)).unwrap_or(i64::MAX));
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
    let mut wd = String::new();
    loop {
        let sent = Instant::now();
        let reply: Vec<String> = store
            .run(
                &SCRIPTS.acquire,
                &name,
                &[&owner, &ttl_us, &id, &wait_us, &wd, &hb_us],
            )
            .await?;
        let now = Anchor::new(field(&reply, 3)?, sent);
        match reply.first().map(String::as_str) {
            Some("1") => {
                let (token, deadline) = (field(&reply, 1)?, field(&reply, 2)?);
                guard.armed = false;
                return Ok(Some(RedisLock::new(
                    store.clone(),
                    &name,
                    &owner,
                    token,
                    from_us(deadline),
                    ttl,
                    now,
                )));
            }
            Some("2") => {
                guard.armed = false;
                return Ok(None);
            }
            _ => {}
        }
        let wait_deadline = field(&reply, 1)?;
        let head_holder = field(&reply, 2)?;
        wd = wait_deadline.to_string();
        let mut pause = heartbeat;
        if wait_deadline != 0 {
            pause = pause.min(now.until(from_us(wait_deadline)));
        }
        if head_holder != 0 {
            pause = pause.min(now.until(from_us(head_holder)));
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
