//! Wake-ups by `LISTEN/NOTIFY`: one dedicated connection per store (shared by its clones)
//! listens on the schema's channel and wakes the local sleeper a notification names.
//!
//! A payload is the id of a waiter handed a lease, or `*` (everybody re-checks: a test moved
//! the clock). Notifications are sent at the commit of the transaction that handed the lease
//! over, so a waiter never wakes before it can see its lease. They can still be missed (the
//! listening connection is re-opened after a failure, and nothing is queued for it
//! meanwhile): every sleeper also wakes at its own bounded deadline, and after each (re)LISTEN
//! every sleeper is woken once, so a lost notification costs time, never a lease.

use std::collections::HashMap;
use std::future::poll_fn;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::AbortHandle;
use tokio_postgres::{AsyncMessage, NoTls};

/// The local sleepers and the listener task.
pub(crate) struct Wake {
    config: tokio_postgres::Config,
    channel: String,
    io_timeout: Duration,
    sleepers: Mutex<HashMap<String, Arc<Notify>>>,
    task: Mutex<Option<AbortHandle>>,
}

/// A sleeper's registration: woken by notifications naming its id; leaves the map when dropped.
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

    /// Makes the next [`notified`](Self::notified) resolve at once.
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
    pub(crate) fn new(
        config: tokio_postgres::Config,
        channel: String,
        io_timeout: Duration,
    ) -> Self {
        Wake {
            config,
            channel,
            io_timeout,
            sleepers: Mutex::new(HashMap::new()),
            task: Mutex::new(None),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Notify>>> {
        self.sleepers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers sleeper `id` and starts the listener if it is not running. It does not wait
    /// for the LISTEN: the listener wakes every registered sleeper once it listens, so a
    /// sleeper registered before it looks at the server misses nothing.
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

    /// Starts the listener task if it is not running.
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
                if listen(&wake).await {
                    backoff = Duration::from_millis(20);
                }
                if wake.strong_count() == 0 {
                    return;
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

/// One listening connection, until it fails: true if it got as far as listening.
async fn listen(wake: &Weak<Wake>) -> bool {
    let Some(this) = wake.upgrade() else {
        return false;
    };
    let (config, channel, io) = (this.config.clone(), this.channel.clone(), this.io_timeout);
    drop(this);
    let Ok(Ok((client, mut connection))) = tokio::time::timeout(io, config.connect(NoTls)).await
    else {
        return false;
    };
    // The connection is driven here, so that its notifications reach this loop; the LISTEN
    // runs alongside, through the client.
    let drive = async {
        while let Some(message) = poll_fn(|cx| connection.poll_message(cx)).await {
            let Ok(AsyncMessage::Notification(note)) = message else {
                if message.is_err() {
                    return;
                }
                continue;
            };
            let Some(this) = wake.upgrade() else { return };
            if note.payload() == "*" {
                this.wake_all();
            } else if let Some(notify) = this.lock().get(note.payload()) {
                notify.notify_one();
            }
        }
    };
    let subscribe = async {
        let listening =
            tokio::time::timeout(io, client.batch_execute(&format!("LISTEN {channel}")))
                .await
                .is_ok_and(|r| r.is_ok());
        if listening {
            // Notifications may have been missed while nobody listened: everybody re-checks.
            if let Some(this) = wake.upgrade() {
                this.wake_all();
            }
            std::future::pending::<()>().await;
        }
        listening
    };
    futures_lite::future::or(
        async {
            drive.await;
            true
        },
        subscribe,
    )
    .await
}

impl Drop for Wake {
    fn drop(&mut self) {
        if let Some(handle) = self.task.get_mut().unwrap_or_else(PoisonError::into_inner) {
            handle.abort();
        }
    }
}
