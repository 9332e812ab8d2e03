//! The engine's wake-up source and its clean-up without a runtime: [`PgListener`] (`LISTEN`
//! on a connection of its own) and [`PgFallback`] (a release or withdrawal on a connection of
//! its own, for a handle dropped while its runtime shuts down).
//!
//! A payload is the id of a waiter handed a lease, or `*` (everybody re-checks: a test moved
//! the clock, a lease was force-released). Notifications are sent at the commit of the
//! transaction that handed the lease over, so a waiter never wakes before it can see its
//! lease. The kit restarts the listener with a backoff after a failure, and wakes every
//! sleeper once it listens again, so a lost notification costs time, never a lease.

use std::future::poll_fn;
use std::time::Duration;

use alkstore_kit::{Fallback, Job, Listener, WakeSink};
use tokio_postgres::error::SqlState;
use tokio_postgres::{AsyncMessage, NoTls};

use crate::pool::LOCKED_RETRY;
use crate::sql::Schema;
use crate::wire::token_param;

/// `LISTEN` on the schema's channel, on a connection of its own (not the pool's).
#[derive(Debug)]
pub struct PgListener {
    config: tokio_postgres::Config,
    pinned: String,
    channel: String,
    io_timeout: Duration,
}

impl PgListener {
    pub(crate) fn new(
        config: tokio_postgres::Config,
        pinned: &str,
        channel: String,
        io_timeout: Duration,
    ) -> Self {
        PgListener {
            config,
            pinned: pinned.into(),
            channel,
            io_timeout,
        }
    }
}

impl Listener for PgListener {
    async fn listen<'a>(&'a mut self, sink: &'a dyn WakeSink) {
        let io = self.io_timeout;
        let Ok(Ok((client, mut connection))) =
            tokio::time::timeout(io, self.config.connect(NoTls)).await
        else {
            return;
        };
        // The connection is driven here, so that its notifications reach this loop; the
        // LISTEN runs alongside, through the client.
        let drive = async {
            while let Some(message) = poll_fn(|cx| connection.poll_message(cx)).await {
                match message {
                    Ok(AsyncMessage::Notification(note)) => sink.deliver(note.payload()),
                    Ok(_) => {}
                    Err(_) => return,
                }
            }
        };
        let subscribe = async {
            // The engine's settings first, as on every connection of its: above all
            // `idle_session_timeout = 0`, since this one is idle between notifications.
            let listen = format!("LISTEN {}", self.channel);
            let setup = async {
                crate::conn::pin(&client, &self.pinned).await?;
                client.batch_execute(&listen).await
            };
            if tokio::time::timeout(io, setup)
                .await
                .is_ok_and(|r| r.is_ok())
            {
                sink.subscribed();
                std::future::pending::<()>().await;
            }
        };
        futures_lite::future::or(drive, subscribe).await;
    }
}

/// Runs a clean-up [`Job`] on a connection of its own (the kit bounds it by the
/// `io_timeout`, on a runtime of its own).
#[derive(Debug)]
pub struct PgFallback {
    config: tokio_postgres::Config,
    pinned: String,
    release: String,
    cancel: String,
}

impl PgFallback {
    pub(crate) fn new(config: tokio_postgres::Config, pinned: &str, schema: &Schema) -> Self {
        let s = &schema.ident;
        PgFallback {
            config,
            pinned: pinned.into(),
            release: format!("SELECT {s}.release($1, $2)"),
            cancel: format!("SELECT {s}.cancel($1, $2, $3)"),
        }
    }
}

impl Fallback for PgFallback {
    /// Whether the server answered (a refusal is an answer too: it is up).
    async fn run(self, job: Job) -> bool {
        let Ok((client, driver)) = crate::conn::open(&self.config, &self.pinned).await else {
            return false;
        };
        let result = loop {
            let result = match &job {
                Job::Release { name, token, .. } => {
                    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 2] =
                        [name, &token_param(*token)];
                    client.execute(&self.release, &params).await
                }
                Job::Withdraw {
                    name,
                    id,
                    unanswered,
                } => client.execute(&self.cancel, &[name, id, unanswered]).await,
            };
            // A row locked beyond the lock wait: tried again (as the pool does), within the
            // io_timeout that bounds this whole call.
            match &result {
                Err(e) if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => {
                    tokio::time::sleep(LOCKED_RETRY).await;
                }
                _ => break result,
            }
        };
        drop(client);
        let _ = driver.await;
        match result {
            Ok(_) => true,
            Err(e) => e.as_db_error().is_some(),
        }
    }
}
