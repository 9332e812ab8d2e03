//! Wake-ups: the registry of local sleepers, and the task that runs an engine's
//! [`Listener`] and restarts it with a backoff.
//!
//! A message is the id of a waiter handed a lease, or `*` (everybody re-checks: a test moved
//! the clock, a lease was force-released). Messages can be lost (pub/sub and NOTIFY reach
//! only who listens, and the listener reconnects after a failure); every sleeper also wakes
//! at its own bounded deadline, and after each (re)subscription every sleeper is woken once,
//! so a lost message costs time, never a lease.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use crate::protocol::{Listener, WakeSink};

/// The local sleepers, by id.
#[derive(Default)]
pub(crate) struct Sleepers(Mutex<HashMap<String, Arc<Notify>>>);

impl Sleepers {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Notify>>> {
        // Never held across an await or user code: a poisoned lock still holds good data.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes every sleeper. The wakers run user code (an executor's, which may call back
    /// into the store): never under the registry's lock, which that code may need.
    fn wake_all(&self) {
        let all: Vec<Arc<Notify>> = self.lock().values().cloned().collect();
        for notify in all {
            wake(&notify);
        }
    }
}

/// Wakes one sleeper. A waker that panics (an executor's bug) must not end the listener,
/// which every other sleeper of the store depends on: its panic stops here.
fn wake(notify: &Notify) {
    let _ = catch_unwind(AssertUnwindSafe(|| notify.notify_one()));
}

impl WakeSink for Sleepers {
    fn subscribed(&self) {
        self.wake_all();
    }

    fn deliver(&self, message: &str) {
        if message == "*" {
            self.wake_all();
        } else {
            // Out of the lock before the waker runs (see `wake_all`).
            let one = self.lock().get(message).cloned();
            if let Some(notify) = one {
                wake(&notify);
            }
        }
    }
}

/// The sleepers and the listener task of one store (shared by its clones).
pub(crate) struct Wake {
    sleepers: Arc<Sleepers>,
    task: Mutex<Option<AbortHandle>>,
    /// The runtime the store was made on, where the listener runs (as the store's docs say):
    /// not on whichever runtime its first sleeper came from, which may go idle for good.
    home: Option<Handle>,
}

/// A sleeper's registration: woken by messages naming its id; leaves the registry when
/// dropped.
pub(crate) struct Registration {
    sleepers: Arc<Sleepers>,
    id: String,
    notify: Arc<Notify>,
}

impl Registration {
    /// Resolves at the next wake-up (or at once if one came since the last call).
    pub(crate) async fn notified(&self) {
        self.notify.notified().await;
    }

    /// Makes the next [`notified`](Self::notified) resolve at once: for a sleeper whose view
    /// of the clock was read before it registered, so that it reads it again.
    pub(crate) fn poke(&self) {
        self.notify.notify_one();
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut sleepers = self.sleepers.lock();
        sleepers.remove(&self.id);
        // Memory follows the live state: a burst of waiters gone leaves no table its size
        // (halved once a quarter is used: amortized, never shrunk and regrown back to back).
        if sleepers.capacity() > 64 && sleepers.len() < sleepers.capacity() / 4 {
            let keep = sleepers.len() * 2;
            sleepers.shrink_to(keep);
        }
    }
}

impl Wake {
    /// The registry of a store made on the current runtime, if any.
    pub(crate) fn new() -> Self {
        Wake {
            sleepers: Arc::default(),
            task: Mutex::default(),
            home: Handle::try_current().ok(),
        }
    }

    /// Registers sleeper `id` and starts a listener made by `listener` if none is running
    /// (the first time, or after the runtime it ran on was dropped). It does not wait for the
    /// subscription: the listener wakes every registered sleeper once it listens, so a
    /// sleeper registered before it looks at the engine misses nothing.
    pub(crate) fn register<L: Listener>(
        &self,
        id: String,
        listener: impl Fn() -> L,
    ) -> Registration {
        let notify = Arc::new(Notify::new());
        self.sleepers.lock().insert(id.clone(), Arc::clone(&notify));
        self.start(listener);
        Registration {
            sleepers: Arc::clone(&self.sleepers),
            id,
            notify,
        }
    }

    /// How many sleepers are registered (tests: nothing is left behind).
    pub(crate) fn sleepers(&self) -> usize {
        self.sleepers.lock().len()
    }

    /// Starts the listener task if it is not running (it restarts its listener itself).
    fn start<L: Listener>(&self, listener: impl Fn() -> L) {
        let mut task = self.task.lock().unwrap_or_else(PoisonError::into_inner);
        if task.as_ref().is_some_and(|handle| !handle.is_finished()) {
            return;
        }
        // On the store's runtime; else (the store's has shut down, or it was made outside
        // any) on the current one. With no runtime at all, sleepers still wake at their own
        // deadlines.
        let homes = self.home.clone().into_iter();
        for runtime in homes.chain(Handle::try_current().ok()) {
            let sleepers = Arc::downgrade(&self.sleepers);
            let spawned = runtime.spawn(listen(sleepers, listener()));
            // Finished at once: that runtime has shut down (the listener ends only once the
            // store is gone, and this one is not).
            if !spawned.is_finished() {
                *task = Some(spawned.abort_handle());
                return;
            }
        }
    }
}

/// Runs `listener` for the sleepers, again with a backoff after each failure, until the
/// store is gone.
async fn listen<L: Listener>(sleepers: Weak<Sleepers>, mut listener: L) {
    let mut backoff = Duration::from_millis(20);
    loop {
        // The store is gone: nobody to wake.
        let Some(sink) = sleepers.upgrade() else {
            return;
        };
        let started = tokio::time::Instant::now();
        // A listener that panics (an engine's bug) failed like any other subscription: it
        // runs again after the backoff, instead of ending the task every sleeper needs.
        {
            let mut listening = core::pin::pin!(listener.listen(&*sink));
            core::future::poll_fn(|cx| {
                catch_unwind(AssertUnwindSafe(|| listening.as_mut().poll(cx)))
                    .unwrap_or(core::task::Poll::Ready(()))
            })
            .await;
        }
        drop(sink);
        // A subscription that lasted a while was a success: start the backoff anew.
        if started.elapsed() > Duration::from_secs(1) {
            backoff = Duration::from_millis(20);
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_millis(500));
    }
}

impl Drop for Wake {
    fn drop(&mut self) {
        if let Some(handle) = self.task.get_mut().unwrap_or_else(PoisonError::into_inner) {
            handle.abort();
        }
    }
}
