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
use tokio::sync::{Notify, watch};
use tokio::task::AbortHandle;

use crate::store::unavailable;
use alkstore_mem::LockError;

/// The local sleepers and the subscriber task.
pub(crate) struct Wake {
    /// The store's client (also used to open a connection of its own when the store's
    /// connection cannot serve, as for a release while the runtime shuts down).
    pub(crate) client: redis::Client,
    channel: String,
    io_timeout: Duration,
    sleepers: Mutex<HashMap<String, Arc<Notify>>>,
    task: Mutex<Option<(AbortHandle, watch::Receiver<bool>)>>,
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

    /// Registers sleeper `id` and waits (up to `io_timeout`) until the subscriber listens, so
    /// that a hand-off published after this returns reaches it.
    pub(crate) async fn register(self: &Arc<Self>, id: String) -> Result<Registration, LockError> {
        let notify = Arc::new(Notify::new());
        self.lock().insert(id.clone(), Arc::clone(&notify));
        let registration = Registration {
            wake: Arc::clone(self),
            id,
            notify,
        };
        let mut ready = self.start();
        let listening = tokio::time::timeout(self.io_timeout, ready.wait_for(|up| *up)).await;
        match listening {
            Ok(Ok(_)) => Ok(registration),
            _ => Err(unavailable(format!(
                "could not subscribe to {} within {:?}",
                self.channel, self.io_timeout
            ))),
        }
    }

    /// Starts the subscriber task if it is not running, and returns its readiness.
    fn start(self: &Arc<Self>) -> watch::Receiver<bool> {
        let mut task = self.task.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((handle, ready)) = &*task
            && !handle.is_finished()
        {
            return ready.clone();
        }
        let (up, ready) = watch::channel(false);
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
                    up.send_replace(true);
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
                        } else if let Ok(id) = std::str::from_utf8(payload)
                            && let Some(notify) = this.lock().get(id)
                        {
                            notify.notify_one();
                        }
                    }
                    up.send_replace(false);
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(500));
            }
        });
        *task = Some((handle.abort_handle(), ready.clone()));
        ready
    }

    fn wake_all(&self) {
        for notify in self.lock().values() {
            notify.notify_one();
        }
    }
}

impl Drop for Wake {
    fn drop(&mut self) {
        if let Some((handle, _)) = self.task.get_mut().unwrap_or_else(PoisonError::into_inner) {
            handle.abort();
        }
    }
}
