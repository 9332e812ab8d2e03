//! [`Cleanup`]: a call that must reach the engine although nobody is left to await it: the
//! release of a dropped [`Lock`](crate::Lock), the withdrawal of a dropped
//! [`Acquire`](crate::Acquire) or of a call whose caller went away. Every engine uses this
//! one mechanism.
//!
//! # How it runs
//! - On a tokio runtime, in a task spawned there, on the store's connection: the fast way,
//!   and the drop returns at once.
//! - With no runtime on the dropping thread, or when the runtime drops that task before it
//!   ran to the end (it is shutting down, as when `#[tokio::main]` returns), the `Cleanup` is
//!   dropped unfinished, and its `Drop` runs the call through the engine's
//!   [`Fallback`](crate::Fallback) on a helper thread with a current-thread runtime, within
//!   the `io_timeout`, and waits for that thread. So a handle dropped as a program's runtime
//!   shuts down is cleaned up before the program goes on to exit.
//! - The waits of one shutdown share one bound: once a helper's call got no answer within the
//!   `io_timeout` (the engine frozen or gone), the helpers of the next `io_timeout` are not
//!   waited for (they still run, detached). A shutdown that drops a thousand handles while
//!   the engine is frozen waits about one `io_timeout`, not a thousand.
//! - Retried: a call that fails (the engine frozen, restarting, its write lock held) is tried
//!   again after a pause, 50 ms doubling to 2 s, up to [`ATTEMPTS`] times in all (about 9 s
//!   of pauses plus the attempts, each within the `io_timeout`), with a tracing event each
//!   time (`cleanup_retried`, and `cleanup_abandoned` when it gives up).
//! - A withdrawal whose request may still be in flight somewhere (`unanswered`: sent on a
//!   connection since replaced, or frozen with the server) runs once more one `io_timeout`
//!   after it succeeded, so that a request the engine only ran after it (it came in on
//!   another connection) is withdrawn too. Engines whose withdrawal leaves a mark that a
//!   later run of the request honours need no such help, and do not get it
//!   ([`Protocol::WITHDRAWAL_LEAVES_MARK`]).
//! - Best effort all the same: if the engine cannot be reached, a lease lapses at its
//!   deadline and a queue entry is skipped once its heartbeat expires.
//!
//! Every job is idempotent (a release carries its request id; a withdrawal of an entry
//! already gone changes nothing), so the helper may run a call the dropped task had sent.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::protocol::{Fallback, Job, Protocol, Settings};
use crate::store::Locks;

/// One clean-up call, run by [`launch`](Self::launch) or, failing that, by its `Drop`.
pub(crate) struct Cleanup<P: Protocol> {
    store: Locks<P>,
    job: Option<Job>,
}

impl<P: Protocol> Cleanup<P> {
    /// The release of lease `token` on `name`.
    pub(crate) fn release(store: &Locks<P>, name: &str, token: u64) -> Self {
        let rid = crate::new_id();
        let job = Job::Release {
            name: name.to_owned(),
            token,
            rid,
        };
        Cleanup {
            store: store.clone(),
            job: Some(job),
        }
    }

    /// The withdrawal of request `id` from `name`.
    pub(crate) fn withdraw(store: &Locks<P>, name: &str, id: &str, unanswered: bool) -> Self {
        let job = Job::Withdraw {
            name: name.to_owned(),
            id: id.to_owned(),
            unanswered,
        };
        Cleanup {
            store: store.clone(),
            job: Some(job),
        }
    }

    /// Runs the call: in a task on the current runtime if there is one, else (and if that
    /// task is dropped before it ends) on a helper thread, which this waits for.
    pub(crate) fn launch(self) {
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let mut cleanup = self;
                    if let Some(job) = cleanup.job.clone() {
                        // Best effort: the outcome changes nothing for anybody.
                        retried(&cleanup.store, &job).await;
                    }
                    cleanup.job = None;
                });
            }
            // No runtime here: `Drop` runs it on a thread of its own.
            Err(_) => drop(self),
        }
    }
}

impl<P: Protocol> Drop for Cleanup<P> {
    fn drop(&mut self) {
        let Some(job) = self.job.take() else { return };
        let fallback = self.store.engine().fallback();
        let io = self.store.config().io_timeout();
        let helper = std::thread::Builder::new()
            .name(format!("alkstore-{}-cleanup", P::NAME))
            .spawn(move || run_alone(fallback, job, io));
        // Not from inside a task being polled: this runs while a runtime drops its tasks (or
        // on a thread with no runtime), where waiting, bounded by the io_timeout, is allowed.
        // While the engine is known not to answer, the helper runs on without being waited for.
        if let Ok(helper) = helper {
            if !stalled() && matches!(helper.join(), Ok(false)) {
                stall_for(io);
            }
        }
    }
}

/// How many times a clean-up call is tried in all.
pub(crate) const ATTEMPTS: u32 = 10;

/// The pause after the first failed attempt; it doubles after each, up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(50);

/// The longest pause between two attempts.
const MAX_PAUSE: Duration = Duration::from_secs(2);

/// Runs `job` on `store` until it succeeds, at most [`ATTEMPTS`] times (see the module
/// docs); a withdrawal of a request that may still be in flight runs once more one
/// `io_timeout` after it succeeded, on an engine whose withdrawal leaves no mark
/// ([`Protocol::WITHDRAWAL_LEAVES_MARK`]). Whether it succeeded.
async fn retried<P: Protocol>(store: &Locks<P>, job: &Job) -> bool {
    let (context, confirm) = match job {
        Job::Release { name, .. } => (name, false),
        Job::Withdraw {
            name, unanswered, ..
        } => (name, *unanswered && !P::WITHDRAWAL_LEAVES_MARK),
    };
    let mut pause = FIRST_PAUSE;
    for attempt in 1..=ATTEMPTS {
        match store.run_job(job).await {
            Ok(()) => {
                if confirm {
                    tokio::time::sleep(store.config().io_timeout()).await;
                    let _ = store.run_job(job).await;
                }
                return true;
            }
            Err(err) if attempt == ATTEMPTS => {
                alkstore_mem::events::cleanup_abandoned(context, attempt, &err);
            }
            Err(err) => {
                alkstore_mem::events::cleanup_retried(context, attempt, &err);
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(MAX_PAUSE);
            }
        }
    }
    false
}

/// A [`Cleanup`] to run if it is dropped armed: for the answer of a call whose caller may be
/// gone (a step's reply nobody receives withdraws its waiter).
pub(crate) struct Undo<P: Protocol>(Option<Cleanup<P>>);

impl<P: Protocol> Undo<P> {
    pub(crate) fn new(cleanup: Cleanup<P>) -> Self {
        Undo(Some(cleanup))
    }

    /// The caller took the answer: nothing to undo.
    pub(crate) fn disarm(mut self) {
        if let Some(mut cleanup) = self.0.take() {
            cleanup.job = None;
        }
    }
}

impl<P: Protocol> Drop for Undo<P> {
    fn drop(&mut self) {
        if let Some(cleanup) = self.0.take() {
            cleanup.launch();
        }
    }
}

/// A request sent under a new id, withdrawn in the background (as [`Cleanup::withdraw`] with
/// `unanswered`) if this is dropped before the caller took its answer. It owns the store, the
/// name and the id, which the request borrows from it: arming it copies nothing.
pub(crate) struct Withdrawal<P: Protocol> {
    pub(crate) store: Locks<P>,
    pub(crate) name: String,
    pub(crate) id: String,
    armed: bool,
}

impl<P: Protocol> Withdrawal<P> {
    /// Armed: dropped, it withdraws request `id` from `name`.
    pub(crate) fn new(store: Locks<P>, name: String, id: String) -> Self {
        Withdrawal {
            store,
            name,
            id,
            armed: true,
        }
    }

    /// The caller took the answer: nothing to withdraw. Gives back the store and the name.
    pub(crate) fn disarm(mut self) -> (Locks<P>, String) {
        self.armed = false;
        (self.store.clone(), std::mem::take(&mut self.name))
    }
}

impl<P: Protocol> Drop for Withdrawal<P> {
    fn drop(&mut self) {
        if self.armed {
            let job = Job::Withdraw {
                name: std::mem::take(&mut self.name),
                id: std::mem::take(&mut self.id),
                unanswered: true,
            };
            let store = self.store.clone();
            Cleanup {
                store,
                job: Some(job),
            }
            .launch();
        }
    }
}

/// Until when clean-ups are not waited for: a helper's call went unanswered for a whole
/// `io_timeout` until then. Process-wide, since one shutdown drops the handles of every store.
static STALLED_UNTIL: Mutex<Option<Instant>> = Mutex::new(None);

/// Whether a recent clean-up found its engine not answering.
fn stalled() -> bool {
    let until = STALLED_UNTIL.lock().unwrap_or_else(PoisonError::into_inner);
    until.is_some_and(|until| Instant::now() < until)
}

/// Marks clean-ups as not answering for the next `io`.
fn stall_for(io: Duration) {
    *STALLED_UNTIL.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now() + io);
}

/// Runs `job` through `fallback` on a current-thread runtime of its own, within `io`.
fn run_alone<F: Fallback>(fallback: F, job: Job, io: Duration) -> bool {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return false;
    };
    runtime.block_on(async move {
        matches!(tokio::time::timeout(io, fallback.run(job)).await, Ok(true))
    })
}
