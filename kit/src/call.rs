//! Cancel safety, written once: every operation runs in a task of its own (after its first
//! poll, which runs in the caller's, so that requests leave in the order they are made).
//!
//! A caller that stops waiting (its own timeout, a `select!` that lost, a dropped task) drops
//! only its side of a channel; the operation runs on to its end, so a connection is never
//! cut in the middle of a call, and whatever the operation brought back is dropped in the
//! task: a grant nobody receives is a [`Lock`](crate::Lock) dropped, which releases it; a
//! waiter's step nobody receives drops an [`Undo`](crate::cleanup::Undo), which withdraws
//! the waiter. Each operation is bounded by the `io_timeout` inside its task.

use core::future::{Future, poll_fn};
use core::task::Poll;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use alkstore_mem::LockError;
use tokio::sync::oneshot;

use crate::errors::unavailable;

/// `Unavailable` when the calling thread has no tokio runtime: the kit's calls, timers and
/// the engines' I/O need one. Checked before anything that would panic without it.
pub(crate) fn need_runtime(engine: &str) -> Result<tokio::runtime::Handle, LockError> {
    tokio::runtime::Handle::try_current().map_err(|_| {
        unavailable(format!(
            "{engine}: no tokio runtime on this thread (a store's calls run on tokio)"
        ))
    })
}

/// Runs `op` within `io`: its first poll here, in the caller's poll, so that requests leave
/// in the order they are made (a later call of the same task cannot overtake it) and an
/// answer ready at once costs no task; the rest in a task on the current runtime, whose
/// answer this waits for. Dropping the returned future leaves the task running; its answer
/// is then dropped there.
///
/// Without a tokio runtime it answers `Unavailable` at once (the engines' I/O needs one).
pub(crate) async fn detached<T: Send + 'static>(
    engine: &'static str,
    io: Duration,
    op: impl Future<Output = Result<T, LockError>> + Send + 'static,
) -> Result<T, LockError> {
    let runtime = need_runtime(engine)?;
    let call = Box::pin(async move {
        match tokio::time::timeout(io, op).await {
            Ok(answer) => answer,
            Err(_) => Err(unavailable(format!(
                "{engine} did not answer within {io:?}"
            ))),
        }
    });
    let mut first = Some(call);
    // Ready at its first poll: the call answered, or it is handed to a task in that same
    // poll (so no drop of the caller's future falls in between).
    let rest = poll_fn(|cx| {
        let Some(mut call) = first.take() else {
            return Poll::Pending;
        };
        Poll::Ready(
            match catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(cx))) {
                Ok(Poll::Ready(answer)) => Err(answer),
                Ok(Poll::Pending) => Ok(call),
                // The engine panicked: what the call held is dropped (and undone) here.
                Err(_) => Err(Err(unavailable(format!(
                    "{engine} panicked during the call"
                )))),
            },
        )
    })
    .await;
    let call = match rest {
        Ok(call) => call,
        Err(answer) => return answer,
    };
    let (tx, rx) = oneshot::channel();
    runtime.spawn(async move {
        let answer = call.await;
        // Nobody waits any more: the answer is dropped here (see the module docs).
        let _ = tx.send(answer);
    });
    match rx.await {
        Ok(answer) => answer,
        // The task was dropped unfinished: its runtime is shutting down (or the engine
        // panicked).
        Err(_) => Err(unavailable(format!(
            "{engine}: the call ended without an answer (its runtime shut down, or the \
             engine panicked)"
        ))),
    }
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
