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
//!   notification is covered by those bounded re-checks.
//! - A step that finds the lease row locked by a transaction holding `fence()` retries after
//!   a short pause (that transaction sends no notification when it ends).
//! - A crashed waiter stops refreshing its heartbeat; once three heartbeat periods pass (or
//!   its wait deadline), whoever settles the name skips and deletes its entry.
//! - Dropping the future (or an error) runs `cancel()` in a spawned task: the entry leaves
//!   the queue, and a lease that went to it passes on to the next waiter.

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use alkstore_mem::LockError;

use crate::lock::PgLock;
use crate::pool::{Fail, Op};
use crate::store::PgLocks;
use crate::wire::{Anchor, field, from_us, micros, numbers, owner_to_sql};

/// Waits for a lock: the future of [`PgLocks::acquire`].
///
/// Resolves to `Ok(Some(lock))` once granted, `Ok(None)` when a bounded wait elapsed first,
/// the request's validation error, or [`LockError::Unavailable`]. Dropping it withdraws the
/// request (cancel-safe; the withdrawal runs in a spawned task). `Send` and `'static`.
#[must_use = "futures do nothing unless polled; dropping this one withdraws the request"]
pub struct PgAcquire {
    state: State,
}

type Waiting = Pin<Box<dyn Future<Output = Result<Option<PgLock>, LockError>> + Send>>;

enum State {
    Start {
        store: PgLocks,
        name: String,
        owner: String,
        ttl: Duration,
        wait: Option<Duration>,
        checked: Result<(), LockError>,
    },
    Waiting(Waiting),
    Done,
}

impl PgAcquire {
    pub(crate) fn new(
        store: PgLocks,
        name: &str,
        owner: &str,
        ttl: Duration,
        checked: Result<(), LockError>,
    ) -> Self {
        PgAcquire {
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
    /// server's clock without a grant (counted from the first poll; it resolves no later
    /// than `wait` plus the `io_timeout`). `timeout(Duration::ZERO)` answers exactly as
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
        if let State::Start { wait: bound, .. } = &mut self.state {
            *bound = Some(wait);
        }
        self
    }
}

impl Future for PgAcquire {
    type Output = Result<Option<PgLock>, LockError>;

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
                reason: "PgAcquire polled after it resolved".into(),
            })),
        }
    }
}

impl fmt::Debug for PgAcquire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Start { .. } => "start",
            State::Waiting(_) => "waiting",
            State::Done => "done",
        };
        f.debug_struct("PgAcquire").field("state", &state).finish()
    }
}

/// A process-unique, unguessable id for a request or a waiter.
pub(crate) fn new_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let random = RandomState::new().hash_one(n);
    format!("{random:016x}{:08x}{n:x}", std::process::id())
}

/// Withdraws a waiter when the wait ends without a grant picked up (dropped or failed).
struct CancelGuard {
    store: PgLocks,
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
                let _ = store.call(Op::Cancel, &[&name, &id]).await;
            });
        }
    }
}

/// How long a step that found the row locked by a fencing transaction waits before the next.
const LOCKED_PAUSE: Duration = Duration::from_millis(50);

async fn wait_for(
    store: PgLocks,
    name: String,
    owner: String,
    ttl: Duration,
    wait: Option<Duration>,
) -> Result<Option<PgLock>, LockError> {
    let started = Instant::now();
    let id = new_id();
    let heartbeat = store.inner.config.waiter_heartbeat();
    let wait_us: i64 = wait.map_or(-1, micros);
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
    };
    let (ttl_us, hb_us) = (micros(ttl), micros(heartbeat * 3));
    let stored_owner = owner_to_sql(&owner);
    let mut wd: i64 = -1;
    loop {
        let sent = Instant::now();
        let step = store
            .call(
                Op::Acquire,
                &[&name, &stored_owner, &ttl_us, &id, &wait_us, &wd, &hb_us],
            )
            .await;
        let pause = match step {
            Err(Fail::Locked) => {
                // A transaction holding fence() on the name: busy until it ends.
                if wait.is_some_and(|w| started.elapsed() >= w) {
                    return Ok(None);
                }
                let left = wait.map_or(LOCKED_PAUSE, |w| w.saturating_sub(started.elapsed()));
                LOCKED_PAUSE.min(left)
            }
            Err(Fail::Down(err)) => return Err(err),
            Ok(rows) => {
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
                        let (at, handed_off) = (lock.deadline().as_nanos(), wd != -1);
                        crate::trace::granted(&name, &owner, lock.token(), at, handed_off);
                        return Ok(Some(lock));
                    }
                    2 => {
                        guard.armed = false;
                        return Ok(None);
                    }
                    _ => {}
                }
                wd = field(&reply, 1)?;
                let head_holder = field(&reply, 2)?;
                let mut pause = heartbeat;
                if wd != 0 {
                    pause = pause.min(now.until(from_us(wd)));
                }
                if head_holder != 0 {
                    pause = pause.min(now.until(from_us(head_holder)));
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
