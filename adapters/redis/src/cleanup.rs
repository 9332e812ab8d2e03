//! [`Cleanup`]: a script call that must reach Redis although nobody is left to await it: the
//! release of a dropped [`RedisLock`](crate::RedisLock), the withdrawal of a dropped
//! [`RedisAcquire`](crate::RedisAcquire). Both handles use this one mechanism.
//!
//! # How it runs
//! - On a tokio runtime, in a task spawned there, on the store's connection: the fast way,
//!   and the drop returns at once.
//! - With no runtime on the dropping thread, or when the runtime drops that task before it
//!   ran to the end (it is shutting down, as when `#[tokio::main]` returns), the `Cleanup` is
//!   dropped unfinished, and its `Drop` runs the call on a helper thread with a
//!   current-thread runtime and a connection of its own, within the `io_timeout`, and waits
//!   for that thread. So a handle dropped as a program's runtime shuts down is cleaned up
//!   before the program goes on to exit.
//! - The waits of one shutdown share one bound: once a helper's call got no answer within
//!   the `io_timeout` (Redis frozen or gone), the helpers of the next `io_timeout` are not
//!   waited for (they still run, detached). A shutdown that drops a thousand handles while
//!   Redis is frozen waits about one `io_timeout`, not a thousand.
//! - Best effort: if Redis cannot be reached, a lease lapses at its deadline and a queue
//!   entry is skipped once its heartbeat expires.
//!
//! Both scripts are idempotent (a release carries its request id, whose mark makes a second
//! run answer as the first; a withdrawal of an entry already gone changes nothing), so the
//! helper may run a call that the dropped task had already sent.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use redis::Script;

use crate::scripts::SCRIPTS;
use crate::store::{RedisLocks, ToRedisArgsDyn};

/// One clean-up call: `script` on `name` with `args`, run by [`launch`](Self::launch) or,
/// failing that, by its `Drop`.
pub(crate) struct Cleanup {
    store: RedisLocks,
    script: &'static Script,
    name: String,
    args: Vec<String>,
    done: bool,
}

impl Cleanup {
    /// The release of lease `token` on `name` (with a request id of its own, so that a run
    /// repeated by the helper answers as the first).
    pub(crate) fn release(store: &RedisLocks, name: &str, token: u64) -> Cleanup {
        let rid = crate::acquire::new_id();
        let mark = store.inner.config.release_mark_ms();
        let args = vec![token.to_string(), rid, mark.to_string()];
        Cleanup::new(store, &SCRIPTS.release, name, args)
    }

    /// The withdrawal of waiter `id` from the queue of `name` (a lease already handed to it
    /// goes on to the next waiter).
    pub(crate) fn withdraw(store: &RedisLocks, name: &str, id: &str) -> Cleanup {
        Cleanup::new(store, &SCRIPTS.cancel, name, vec![id.to_owned()])
    }

    fn new(store: &RedisLocks, script: &'static Script, name: &str, args: Vec<String>) -> Self {
        Cleanup {
            store: store.clone(),
            script,
            name: name.to_owned(),
            args,
            done: false,
        }
    }

    /// Runs the call: in a task on the current runtime if there is one, else (and if that
    /// task is dropped before it ends) on a helper thread, which this waits for.
    pub(crate) fn launch(self) {
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let mut job = self;
                    let args: Vec<&dyn ToRedisArgsDyn> =
                        job.args.iter().map(|a| a as &dyn ToRedisArgsDyn).collect();
                    // Best effort: the outcome (or an error) changes nothing for anybody.
                    let _ = job
                        .store
                        .run::<redis::Value>(job.script, &job.name, &args)
                        .await;
                    job.done = true;
                });
            }
            // No runtime here: `Drop` runs it on a thread of its own.
            Err(_) => drop(self),
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let client = self.store.inner.wake.client.clone();
        let prefix = self.store.inner.prefix.clone();
        let io = self.store.inner.config.io_timeout();
        let (script, name, args) = (
            self.script,
            std::mem::take(&mut self.name),
            std::mem::take(&mut self.args),
        );
        let helper = std::thread::Builder::new()
            .name("alkstore-redis-cleanup".into())
            .spawn(move || run_alone(&client, script, &prefix, &name, &args, io));
        // Not from inside a task being polled: this runs while a runtime drops its tasks (or
        // on a thread with no runtime), where waiting, bounded by the io_timeout, is allowed.
        // While Redis is known not to answer, the helper runs on without being waited for.
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

/// Whether a recent clean-up found Redis not answering.
fn stalled() -> bool {
    let until = STALLED_UNTIL.lock().unwrap_or_else(PoisonError::into_inner);
    until.is_some_and(|until| Instant::now() < until)
}

/// Marks Redis as not answering for the next `io`.
fn stall_for(io: Duration) {
    *STALLED_UNTIL.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now() + io);
}

/// Runs `script` once on a connection of its own, on a current-thread runtime of its own,
/// within `io`.
fn run_alone(
    client: &redis::Client,
    script: &Script,
    prefix: &str,
    name: &str,
    args: &[String],
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
            let mut conn = client.get_multiplexed_async_connection().await?;
            let mut invocation = script.key(prefix);
            invocation.arg(name);
            for arg in args {
                invocation.arg(arg);
            }
            invocation.invoke_async::<redis::Value>(&mut conn).await
        };
        matches!(tokio::time::timeout(io, call).await, Ok(Ok(_)))
    })
}
