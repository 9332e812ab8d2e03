//! Cancel safety, written once: an operation its caller stops waiting for runs on to its end
//! in a task of its own.
//!
//! The operation is polled in the caller's task while the caller waits: no task hand-off and
//! no thread wake-up on the way, so a round trip costs what the engine's does, and requests
//! leave in the order they are made. A caller that stops waiting (its own timeout, a
//! `select!` that lost, a dropped task) drops the [`Detached`] future, whose `Drop` moves the
//! unfinished operation into a task spawned on the runtime it started on: it runs on to its
//! end, so a connection is never cut in the middle of a call, and whatever the operation
//! brought back is dropped in that task: a grant nobody receives is a
//! [`Lock`](crate::Lock) dropped, which releases it; a waiter's step nobody receives drops an
//! [`Undo`](crate::cleanup::Undo), which withdraws the waiter. If that runtime is shutting
//! down, the task is dropped unfinished, and so are the clean-ups inside the operation, which
//! then run on their fallback thread. An engine that panics while polled answers
//! `Unavailable` (what the call held is dropped, and undone, then).
//!
//! # A call refused for time
//! The caller waits at most the `io_timeout`, and is then answered `Unavailable`. The kit
//! treats that exactly as a caller that stopped waiting: the operation is not cut off (its
//! request may already be on the engine's side of the connection, frozen with the server, or
//! queued behind a write lock, and may still run there), it is moved into a task of its own
//! and runs on, so that whatever it does once the engine answers is undone by the same
//! mechanism. So a caller told a call failed never ends up holding, or queued for, a lease
//! no handle has. That task gives up on the answer after [`LATE_ANSWER`] more (then the
//! operation is dropped, and its undo withdraws the request by its id, in the background,
//! retried: see [`Cleanup`](crate::cleanup::Cleanup)).

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use alkstore_mem::LockError;
use tokio::runtime::Handle;

use crate::errors::unavailable;

/// `Unavailable` when the calling thread has no tokio runtime: the kit's calls, timers and
/// the engines' I/O need one. Checked before anything that would panic without it.
pub(crate) fn need_runtime(engine: &str) -> Result<Handle, LockError> {
    Handle::try_current().map_err(|_| {
        unavailable(format!(
            "{engine}: no tokio runtime on this thread (a store's calls run on tokio)"
        ))
    })
}

/// An operation boxed for [`Detached`].
type Op<T> = Pin<Box<dyn Future<Output = Result<T, LockError>> + Send>>;

/// How long a call whose caller stopped waiting (or was answered `Unavailable` at the
/// `io_timeout`) may still run in its task for an answer, beyond the `io_timeout`; then it is
/// dropped and what it may have done is withdrawn by its request id.
pub(crate) const LATE_ANSWER: Duration = Duration::from_secs(60);

/// An operation in flight: polled by its caller, moved into a task of its own if the caller
/// drops it unfinished.
struct Detached<T: Send + 'static> {
    op: Option<Op<T>>,
    runtime: Handle,
    engine: &'static str,
    /// How long the operation may run on in a task of its own.
    late: Duration,
}

impl<T: Send + 'static> Future for Detached<T> {
    type Output = Result<T, LockError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let engine = self.engine;
        let Some(op) = self.op.as_mut() else {
            return Poll::Ready(Err(unavailable(format!(
                "{engine}: a call polled after it resolved"
            ))));
        };
        let answer = match catch_unwind(AssertUnwindSafe(|| op.as_mut().poll(cx))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(answer)) => answer,
            // The engine panicked: what the call held is dropped (and undone) here.
            Err(_) => Err(unavailable(format!("{engine} panicked during the call"))),
        };
        self.op = None;
        Poll::Ready(answer)
    }
}

impl<T: Send + 'static> Drop for Detached<T> {
    fn drop(&mut self) {
        if let Some(op) = self.op.take() {
            // Nobody waits any more: the operation ends in a task, and its answer is dropped
            // there (see the module docs). Bounded, so that a call the engine never answers
            // is not kept for ever: then its undo runs.
            let late = self.late;
            self.runtime.spawn(async move {
                drop(tokio::time::timeout(late, op).await);
            });
        }
    }
}

/// Runs `op` and waits for its answer, at most `io`: then the answer is `Unavailable`, and
/// `op` runs on in a task of its own, as it does when the returned future is dropped before
/// it resolved: on the runtime it started on, to its end (at most [`LATE_ANSWER`] more), its
/// answer dropped there (a grant released, a waiter withdrawn).
///
/// Without a tokio runtime it answers `Unavailable` at once (the engines' I/O needs one).
pub(crate) async fn detached<T: Send + 'static>(
    engine: &'static str,
    io: Duration,
    op: impl Future<Output = Result<T, LockError>> + Send + 'static,
) -> Result<T, LockError> {
    let runtime = need_runtime(engine)?;
    let call = Detached {
        op: Some(Box::pin(op)),
        runtime,
        engine,
        late: io.saturating_add(LATE_ANSWER),
    };
    // On the timeout, `call` is dropped unfinished: its `Drop` lets the operation run on.
    tokio::time::timeout(io, call).await.unwrap_or_else(|_| {
        Err(unavailable(format!(
            "{engine} did not answer within {io:?}"
        )))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[derive(Debug)]
    struct Flag(Arc<AtomicBool>);
    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_caller_lets_the_call_finish_and_drops_its_answer_there() {
        let (finished, dropped) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (f, d) = (Arc::clone(&finished), Arc::clone(&dropped));
        let call = detached("toy", Duration::from_secs(5), async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            f.store(true, Ordering::SeqCst);
            Ok(Flag(d))
        });
        // The caller gives up after 1 ms.
        assert!(
            tokio::time::timeout(Duration::from_millis(1), call)
                .await
                .is_err()
        );
        assert!(!finished.load(Ordering::SeqCst));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(finished.load(Ordering::SeqCst), "the call ran to its end");
        assert!(
            dropped.load(Ordering::SeqCst),
            "its answer was dropped in the task"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_past_the_io_timeout_is_unavailable() {
        let err = detached("toy", Duration::from_millis(5), async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok(())
        })
        .await
        .unwrap_err();
        assert!(
            err.to_string().contains("toy did not answer within 5ms"),
            "{err}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_refused_for_time_runs_on_and_its_late_answer_is_dropped_in_the_task() {
        let (finished, dropped) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (f, d) = (Arc::clone(&finished), Arc::clone(&dropped));
        let err = detached("toy", Duration::from_millis(5), async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            f.store(true, Ordering::SeqCst);
            Ok(Flag(d))
        })
        .await
        .unwrap_err();
        assert!(err.to_string().contains("within 5ms"), "{err}");
        assert!(!finished.load(Ordering::SeqCst));
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(finished.load(Ordering::SeqCst), "the refused call ran on");
        assert!(
            dropped.load(Ordering::SeqCst),
            "its late answer was dropped (undone) in the task"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_never_answered_is_dropped_after_the_late_answer_bound() {
        let dropped = Arc::new(AtomicBool::new(false));
        let guard = Flag(Arc::clone(&dropped));
        let err = detached("toy", Duration::from_millis(5), async move {
            let _guard = guard;
            std::future::pending::<()>().await;
            Ok(())
        })
        .await
        .unwrap_err();
        assert!(err.to_string().contains("did not answer"), "{err}");
        tokio::time::sleep(LATE_ANSWER - Duration::from_millis(100)).await;
        assert!(!dropped.load(Ordering::SeqCst), "still waited for");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            dropped.load(Ordering::SeqCst),
            "dropped (its undo runs) once the bound passed"
        );
    }

    #[test]
    fn no_runtime_is_unavailable_not_a_panic() {
        let err = futures_lite::future::block_on(detached("toy", Duration::from_secs(1), async {
            Ok(())
        }))
        .unwrap_err();
        assert!(err.to_string().contains("no tokio runtime"), "{err}");
    }
}
