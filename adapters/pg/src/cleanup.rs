//! [`Cleanup`]: a call that must reach PostgreSQL although nobody is left to await it: the
//! release of a dropped [`PgLock`](crate::PgLock), the withdrawal of a dropped
//! [`PgAcquire`](crate::PgAcquire). Both handles use this one mechanism (as the Redis engine
//! does).
//!
//! # How it runs
//! - On a tokio runtime, in a task spawned there, on the store's pool: the fast way, and the
//!   drop returns at once.
//! - With no runtime on the dropping thread, or when the runtime drops that task before it
//!   ran to the end (it is shutting down, as when `#[tokio::main]` returns), the `Cleanup` is
//!   dropped unfinished, and its `Drop` runs the call on a helper thread with a
//!   current-thread runtime and a connection of its own, within the `io_timeout`, and waits
//!   for that thread. So a handle dropped as a program's runtime shuts down is cleaned up
//!   before the program goes on to exit.
//! - The waits of one shutdown share one bound: once a helper's call got no answer within
//!   the `io_timeout` (the server stopped or gone), the helpers of the next `io_timeout` are
//!   not waited for (they still run, detached). A shutdown that drops a thousand handles
//!   while the server is frozen waits about one `io_timeout`, not a thousand.
//! - Best effort: if the server cannot be reached, a lease lapses at its deadline and a queue
//!   entry is skipped once its heartbeat expires.
//!
//! Both calls may run twice (the task's call sent, then the helper's): a second release finds
//! the token gone (or a newer lease, which it never touches), a second withdrawal finds the
//! entry gone.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

use crate::pool::{LOCKED_RETRY, Op};
use crate::store::PgLocks;

/// What a [`Cleanup`] does.
enum Job {
    /// Release lease `token`.
    Release { token: i64 },
    /// Withdraw waiter `id`; `mark`: a step of it may still be in flight (see `cancel.sql`).
    Withdraw { id: String, mark: bool },
}

/// One clean-up call on `name`, run by [`launch`](Self::launch) or, failing that, by its
/// `Drop`.
pub(crate) struct Cleanup {
    store: PgLocks,
    name: String,
    job: Job,
    done: bool,
}

impl Cleanup {
    /// The release of lease `token` on `name`.
    pub(crate) fn release(store: &PgLocks, name: &str, token: u64) -> Cleanup {
        let token = i64::try_from(token).unwrap_or(i64::MAX);
        Cleanup::new(store, name, Job::Release { token })
    }

    /// The withdrawal of waiter `id` from the queue of `name` (a lease already handed to it
    /// goes on to the next waiter); `mark` when a step of it may still be in flight.
    pub(crate) fn withdraw(store: &PgLocks, name: &str, id: &str, mark: bool) -> Cleanup {
        let id = id.to_owned();
        Cleanup::new(store, name, Job::Withdraw { id, mark })
    }

    fn new(store: &PgLocks, name: &str, job: Job) -> Self {
        Cleanup {
            store: store.clone(),
            name: name.to_owned(),
            job,
            done: false,
        }
    }

    /// The statement and its operation.
    fn op(&self) -> Op {
        match self.job {
            Job::Release { .. } => Op::Release,
            Job::Withdraw { .. } => Op::Cancel,
        }
    }

    /// Runs the call: in a task on the current runtime if there is one, else (and if that
    /// task is dropped before it ends) on a helper thread, which this waits for.
    pub(crate) fn launch(self) {
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let mut job = self;
                    job.run().await;
                    job.done = true;
                });
            }
            // No runtime here: `Drop` runs it on a thread of its own.
            Err(_) => drop(self),
        }
    }

    /// The call on the store's pool (which tries a call that found a row locked again,
    /// within the `io_timeout`; see `Op::retries_locked`).
    async fn run(&self) {
        // Best effort: the outcome (or an error) changes nothing for anybody.
        let _ = self.store.call(self.op(), &self.params()).await;
    }

    fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        match &self.job {
            Job::Release { token } => vec![&self.name, token],
            Job::Withdraw { id, mark } => vec![&self.name, id, mark],
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let inner = &self.store.inner;
        let config = inner.pool.config().clone();
        let io = inner.config.io_timeout();
        let s = &inner.schema.ident;
        let (sql, name) = (
            match self.job {
                Job::Release { .. } => format!("SELECT {s}.release($1, $2)"),
                Job::Withdraw { .. } => format!("SELECT {s}.cancel($1, $2, $3)"),
            },
            std::mem::take(&mut self.name),
        );
        let job = std::mem::replace(&mut self.job, Job::Release { token: 0 });
        let helper = std::thread::Builder::new()
            .name("alkstore-pg-cleanup".into())
            .spawn(move || run_alone(&config, &sql, &name, &job, io));
        // Not from inside a task being polled: this runs while a runtime drops its tasks (or
        // on a thread with no runtime), where waiting, bounded by the io_timeout, is allowed.
        // While the server is known not to answer, the helper runs on without being waited
        // for.
        if let Ok(helper) = helper {
            if !stalled() && matches!(helper.join(), Ok(false)) {
                stall_for(io);
            }
        }
    }
}

/// Until when clean-ups are not waited for: a helper's call went unanswered for a whole
/// `io_timeout` until then. Process-wide, since one shutdown drops the handles of every store.
static STALLED_UNTIL: Mutex<Option<Instant>> = Mutex::new(None);

/// Whether a recent clean-up found the server not answering.
fn stalled() -> bool {
    let until = STALLED_UNTIL.lock().unwrap_or_else(PoisonError::into_inner);
    until.is_some_and(|until| Instant::now() < until)
}

/// Marks the server as not answering for the next `io`.
fn stall_for(io: Duration) {
    *STALLED_UNTIL.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now() + io);
}

/// Runs `sql` for `job` on `name` once, on a connection of its own, on a current-thread
/// runtime of its own, within `io`: whether the server answered.
fn run_alone(
    config: &tokio_postgres::Config,
    sql: &str,
    name: &str,
    job: &Job,
    io: Duration,
) -> bool {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return false;
    };
    runtime.block_on(async move {
        let call = async {
            let (client, connection) = config.connect(tokio_postgres::NoTls).await?;
            let driver = tokio::spawn(connection);
            let result = loop {
                let result = match job {
                    Job::Release { token } => client.execute(sql, &[&name, token]).await,
                    Job::Withdraw { id, mark } => client.execute(sql, &[&name, id, mark]).await,
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
            result
        };
        // A refusal by the server is an answer too: it is up.
        match tokio::time::timeout(io, call).await {
            Ok(Ok(_)) => true,
            Ok(Err(e)) => e.as_db_error().is_some(),
            Err(_) => false,
        }
    })
}
