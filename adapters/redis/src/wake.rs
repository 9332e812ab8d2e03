//! Wake-ups by pub/sub: one subscriber connection per store (shared by its clones) listens on
//! `{ns}:wake` and wakes the local sleeper a message names.
//!
//! A message is the id of a waiter handed a lease, or `*` (everybody re-checks: a test moved
//! the clock). Messages can be lost (pub/sub is at most once, and the subscriber reconnects
//! after a failure); every sleeper also wakes at its own bounded deadline, and after each
//! (re)subscription every sleeper is woken once, so a lost message costs time, never a lease.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_lite::StreamExt;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

/// The local sleepers and the subscriber task.
pub(crate) struct Wake {
    /// The store's client (also used to open a connection of its own when the store's
    /// connection cannot serve, as for a release while the runtime shuts down).
    pub(crate) client: redis::Client,
    channel: String,
    io_timeout: Duration,
    sleepers: Mutex<HashMap<String, Arc<Notify>>>,
    task: Mutex<Option<AbortHandle>>,
}

/// A sleeper's registration: woken by messages naming its id; leaves the map when dropped.
pub(crate) struct Registration {
    wake: Arc<Wake>,
    id: String,
    notify: Arc<Notify>,
}

impl Registration {
    /// Resolves at the next wake-up (or at once if one came since the last call).
    pub(crate) async fn notified(&self) {
        self.notify.notified().await;
    }

    /// Makes the next [`notified`](Self::notified) resolve at once: for a sleeper whose view
    /// of the clock was read before it registered, so that it reads it again (a wake-up
    /// published in between reached nobody).
    pub(crate) fn poke(&self) {
        self.notify.notify_one();
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.wake.lock().remove(&self.id);
    }
}

impl Wake {
    pub(crate) fn new(client: redis::Client, channel: String, io_timeout: Duration) -> Self {
        Wake {
            client,
            channel,
            io_timeout,
            sleepers: Mutex::new(HashMap::new()),
            task: Mutex::new(None),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Notify>>> {
        self.sleepers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers sleeper `id` and starts the subscriber if it is not running. It does not
    /// wait for the subscription: a message published before the subscriber listens is
    /// lost, but the subscriber wakes every registered sleeper once it listens (and again
    /// after each resubscription), so a sleeper registered before it looks at the server
    /// misses nothing, and the caller's first step costs no subscription round trips. If
    /// the subscription cannot be made (Redis unreachable, or a user without channel
    /// permission), sleepers still wake at their own bounded deadlines.
    pub(crate) fn register(self: &Arc<Self>, id: String) -> Registration {
        let notify = Arc::new(Notify::new());
        self.lock().insert(id.clone(), Arc::clone(&notify));
        self.start();
        Registration {
            wake: Arc::clone(self),
            id,
            notify,
        }
    }

    /// Starts the subscriber task if it is not running.
    fn start(self: &Arc<Self>) {
        let mut task = self.task.lock().unwrap_or_else(PoisonError::into_inner);
        if task.as_ref().is_some_and(|handle| !handle.is_finished()) {
            return;
        }
        // The task holds the `Wake` weakly, so that dropping the last store ends it.
        let wake = Arc::downgrade(self);
        let handle = tokio::spawn(async move {
            let mut backoff = Duration::from_millis(20);
            loop {
                let Some(this) = wake.upgrade() else { return };
                let (client, channel, timeout) =
                    (this.client.clone(), this.channel.clone(), this.io_timeout);
                drop(this);
                let subscribed = tokio::time::timeout(timeout, async {
                    let mut pubsub = client.get_async_pubsub().await?;
                    pubsub.subscribe(&channel).await?;
                    Ok::<_, redis::RedisError>(pubsub)
                })
                .await;
                if let Ok(Ok(pubsub)) = subscribed {
                    backoff = Duration::from_millis(20);
                    // Messages may have been lost while nobody listened: everybody re-checks.
                    if let Some(this) = wake.upgrade() {
                        this.wake_all();
                    }
                    let mut messages = pubsub.into_on_message();
                    while let Some(message) = messages.next().await {
                        let Some(this) = wake.upgrade() else { return };
                        let payload = message.get_payload_bytes();
                        if payload == b"*" {
                            this.wake_all();
                        } else if let Ok(id) = std::str::from_utf8(payload) {
                            if let Some(notify) = this.lock().get(id) {
                                notify.notify_one();
                            }
                        }
                    }
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(500));
            }
        });
        *task = Some(handle.abort_handle());
    }

    fn wake_all(&self) {
        for notify in self.lock().values() {
            notify.notify_one();
        }
    }
}

impl Drop for Wake {
    fn drop(&mut self) {
        if let Some(handle) = self.task.get_mut().unwrap_or_else(PoisonError::into_inner) {
            handle.abort();
        }
    }
}
