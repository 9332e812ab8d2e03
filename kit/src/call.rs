//! Cancel safety, written once: an operation a caller stops waiting for runs on to its end
//! in a task of its own.
//!
//! The operation is polled in the caller's task while the caller waits (no task hand-off and
//! no thread wake-up on the way: the round trip costs what the engine's does). A caller that
//! stops waiting (its own timeout, a `select!` that lost, a dropped task) drops the
//! [`Detached`] future, whose `Drop` moves the unfinished operation into a task spawned on
//! the runtime it started on: it runs on to its end, so a connection is never cut in the
//! middle of a call, and whatever the operation brought back is dropped in that task: a grant
//! nobody receives is a [`Lock`](crate::Lock) dropped, which releases it; a waiter's step
//! nobody receives drops an [`Undo`](crate::cleanup::Undo), which withdraws the waiter. If
//! that runtime is shutting down, the task is dropped unfinished, and so are the clean-ups
//! inside the operation, which then run on their fallback thread. Each operation is bounded
//! by the `io_timeout`.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::time::Duration;

use alkstore_mem::LockError;
use tokio::runtime::Handle;

use crate::errors::unavailable;

/// An operation, boxed so that it can move into a task.
type Op<T> = Pin<Box<dyn Future<Output = Result<T, LockError>> + Send>>;

/// An operation in flight: polled by its caller, moved into a task of its own if the caller
/// drops it unfinished.
struct Detached<T: Send + 'static> {
    op: Option<Op<T>>,
    runtime: Handle,
}

impl<T: Send + 'static> Future for Detached<T> {
    type Output = Result<T, LockError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(op) = self.op.as_mut() else {
            return Poll::Ready(Err(unavailable("polled after it resolved")));
        };
        let answer = std::task::ready!(op.as_mut().poll(cx));
        self.op = None;
        Poll::Ready(answer)
    }
}

impl<T: Send + 'static> Drop for Detached<T> {
    fn drop(&mut self) {
        if let Some(op) = self.op.take() {
            // Nobody waits any more: the operation ends in a task, and its answer is dropped
            // there (see the module docs).
            self.runtime.spawn(async move {
                drop(op.await);
            });
        }
    }
}

/// Runs `op` within `io` and waits for its answer. Dropping the returned future before it
/// resolved moves `op` into a task on the current runtime, which runs it to its end and drops
/// its answer there.
///
/// Without a tokio runtime it answers `Unavailable` at once (the engines' I/O needs one).
pub(crate) async fn detached<T: Send + 'static>(
    engine: &'static str,
    io: Duration,
    op: impl Future<Output = Result<T, LockError>> + Send + 'static,
) -> Result<T, LockError> {
    let Ok(runtime) = Handle::try_current() else {
        return Err(unavailable(format!(
            "{engine}: no tokio runtime on this thread (a store's calls run on tokio)"
        )));
    };
    let op = async move {
        match tokio::time::timeout(io, op).await {
            Ok(answer) => answer,
            Err(_) => Err(unavailable(format!(
                "{engine} did not answer within {io:?}"
            ))),
        }
    };
    Detached {
        op: Some(Box::pin(op)),
        runtime,
    }
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

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

    #[test]
    fn no_runtime_is_unavailable_not_a_panic() {
        let err = futures_lite::future::block_on(detached("toy", Duration::from_secs(1), async {
            Ok(())
        }))
        .unwrap_err();
        assert!(err.to_string().contains("no tokio runtime"), "{err}");
    }
}
