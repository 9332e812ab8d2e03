//! [`IdbAcquire`]: the waiting protocol.
//!
//! A waiting `acquire` is a loop of steps, each one transaction (`ops::step`): the first
//! takes a free name or puts a ticket at the back of the name's queue; later ones refresh the
//! ticket's heartbeat, pick up a lease handed to it, or leave once the wait is over. Between
//! steps the waiter sleeps until the first of: a wake-up naming it on the
//! `BroadcastChannel` (a release handed it the lease, or it became first in line), its next
//! heartbeat, the end of its wait, the death of a context it waits behind (the holder's or a
//! waiter's ahead: each step answers their context ids, and the context keeps one waiting
//! request on each one's presence Web Lock, granted the instant it dies, see
//! `js/presence.rs`), and, when it is first in line, the holder's deadline (a holder that
//! stopped without dying). A lost message therefore costs at most one heartbeat, never a
//! lease.
//!
//! The waiters of one context on one name share their heartbeats: every step refreshes the
//! tickets of all of them (`ops::step`), and a waiter whose heartbeat comes due skips its
//! step when a sibling stepped on the name within the last heartbeat (it sets out to step
//! first, so that siblings waking together step once). A step also wakes the siblings it
//! finds news for (a hand-off written for one, the head of the queue): a lost message costs
//! them no more than it costs a waiter alone. So a context with hundreds of waiters on a
//! name costs one transaction per heartbeat, not hundreds.

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use alkstore_mem::LockError;
use alkstore_mem::contract::{AcquireRequest, PendingAcquire};

use crate::cancel::CancelGuard;
use crate::lock::IdbLock;
use crate::store::IdbLocks;
use crate::sys;
use crate::tx::ops::{self, Step, Stepped};
use crate::util::{Either, micros, race, sleep_us};
use crate::{BoxedFuture, IdbFuture};

/// The future of [`IdbLocks::acquire`].
///
/// Resolves to `Ok(Some(lock))` once granted, `Ok(None)` when a bounded wait elapsed first,
/// the request's validation error, or [`LockError::Unavailable`]. Dropping it withdraws the
/// request (its ticket leaves the queue, and a lease already handed to it goes on).
#[must_use = "futures do nothing unless polled; dropping this one withdraws the request"]
pub struct IdbAcquire(PendingAcquire<IdbLocks, IdbLock>);

impl IdbAcquire {
    pub(crate) fn new(
        store: IdbLocks,
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
        IdbAcquire(PendingAcquire::new(request, checked, start, "IdbAcquire"))
    }

    /// Bounds the wait: the future resolves to `Ok(None)` once `wait` has elapsed on the
    /// engine's clock without a grant (counted from the first poll; the answer comes no later
    /// than `wait` + the `io_timeout`). `timeout(Duration::ZERO)` answers exactly as
    /// [`IdbLocks::try_lock`] does. Once the future has been polled this changes nothing.
    ///
    /// # Example
    /// ```no_run
    /// # use core::time::Duration;
    /// # async fn run(locks: alkstore_idb::IdbLocks) -> Result<(), alkstore_idb::LockError> {
    /// let lock = locks.acquire("job", "tab-1", Duration::from_secs(10))
    ///     .timeout(Duration::from_millis(500))
    ///     .await?;
    /// # drop(lock); Ok(())
    /// # }
    /// ```
    pub fn timeout(mut self, wait: Duration) -> Self {
        self.0.set_timeout(wait);
        self
    }
}

impl Future for IdbAcquire {
    type Output = Result<Option<IdbLock>, LockError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl fmt::Debug for IdbAcquire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Starts waiting for `request`, at the future's first poll (the wait counts on the
/// engine's clock from there).
fn start(request: AcquireRequest<IdbLocks>) -> IdbFuture<'static, Option<IdbLock>> {
    let AcquireRequest {
        store,
        name,
        owner,
        ttl,
        wait,
    } = request;
    BoxedFuture::new(wait_for(store, name, owner, ttl, wait))
}

async fn wait_for(
    store: IdbLocks,
    name: String,
    owner: String,
    ttl: Duration,
    wait: Option<Duration>,
) -> Result<Option<IdbLock>, LockError> {
    let id = sys::new_id();
    let heartbeat = store.config().waiter_heartbeat();
    let heartbeat_us = micros(heartbeat);
    // Registered before the first step, so that no wake-up meant for it is missed.
    let watch = store.inner.db.register(&id, &name, None);
    let mut guard = CancelGuard::new(&store, &name, id.clone());
    let ttl_us = micros(ttl);
    // The wait counts from this first poll, by this context's estimate of the engine's clock
    // (never ahead of what the transactions read): a zero wait ends at once, as try_lock.
    let wait_until = wait.map_or(0, |w| store.now_us().saturating_add(micros(w)).max(1));
    loop {
        // Set out to step: the siblings of this context waiting on the name may skip their
        // heartbeat (this step refreshes their tickets too).
        store.inner.db.note_refresh(&name, store.now_us());
        let (i, o) = (id.clone(), owner.clone());
        let step = Step {
            id: "",
            owner: "",
            ttl: ttl_us,
            wait_until,
            heartbeat: heartbeat_us.saturating_mul(3),
        };
        let (stepped, now, ahead, news) = store
            .on_row(&name, move |row, cx| {
                let step = Step {
                    id: &i,
                    owner: &o,
                    ..step
                };
                let stepped = ops::step(row, cx, &step);
                let ahead = match stepped {
                    Stepped::Queued { .. } => ops::ahead(row, cx, &i),
                    _ => Vec::new(),
                };
                (stepped, cx.now, ahead, ops::news(row, cx, &i))
            })
            .await?;
        store.inner.db.wake_ids(&news);
        match stepped {
            Stepped::Granted(granted) => {
                guard.disarm();
                return Ok(Some(IdbLock::new(
                    store,
                    name,
                    owner,
                    granted.token,
                    granted.deadline,
                    ttl,
                )));
            }
            Stepped::Over => {
                guard.disarm();
                return Ok(None);
            }
            Stepped::Queued { head_deadline } => {
                // Woken as soon as a context it waits behind dies (its lease or its ticket
                // is then over: the next step sees it).
                store.inner.db.watch_contexts(&ahead);
                let ends = Ends {
                    wait_until,
                    head_deadline,
                };
                let mut until = ends.cap(now.saturating_add(heartbeat_us));
                loop {
                    let nap = until.saturating_sub(store.now_us());
                    if let Either::Right(()) = race(sleep_us(nap), watch.notified()).await {
                        break; // news: look now
                    }
                    let t = store.now_us();
                    if ends.reached(t) {
                        break;
                    }
                    // Only a heartbeat is due: skip it when a sibling of this context stepped
                    // on the name since (refreshing this ticket too: only in a context with
                    // an id, see `ops::step`).
                    let sibling = store.inner.db.refreshed(&name).saturating_add(heartbeat_us);
                    if sibling <= t || store.inner.db.context_id().is_empty() {
                        break;
                    }
                    until = ends.cap(sibling);
                }
            }
        }
    }
}

/// The times a queued waiter must step at whatever its siblings do: the end of its wait
/// (0: none), and, first in line, the holder's deadline.
#[derive(Clone, Copy, Debug)]
struct Ends {
    wait_until: u64,
    head_deadline: Option<u64>,
}

impl Ends {
    /// `until`, or the earlier of these ends.
    fn cap(self, mut until: u64) -> u64 {
        if self.wait_until != 0 {
            until = until.min(self.wait_until);
        }
        if let Some(deadline) = self.head_deadline {
            until = until.min(deadline);
        }
        until
    }

    /// Whether one of them is reached at `t`.
    fn reached(self, t: u64) -> bool {
        (self.wait_until != 0 && t >= self.wait_until) || self.head_deadline.is_some_and(|d| t >= d)
    }
}
