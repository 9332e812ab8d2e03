//! [`PendingAcquire`]: the `acquire` future of an engine whose waiting is `async` code,
//! started at its first poll.

use alloc::string::String;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use crate::boxed::BoxedFuture;
use crate::error::LockError;

/// What an `acquire` asked for: handed to the engine's waiting code at the first poll.
#[derive(Debug)]
pub struct AcquireRequest<S> {
    /// The store the request was made on.
    pub store: S,
    /// The lock's name.
    pub name: String,
    /// The owner to grant it to.
    pub owner: String,
    /// The ttl of the lease to grant.
    pub ttl: Duration,
    /// The bound set by [`PendingAcquire::set_timeout`]; `None`: wait without limit.
    pub wait: Option<Duration>,
}

/// What the engine's waiting code resolves to: a grant, `None` once a bounded wait is over,
/// or an error.
type Waiting<L> = BoxedFuture<'static, Result<Option<L>, LockError>>;

enum State<S, L> {
    Start {
        request: AcquireRequest<S>,
        checked: Result<(), LockError>,
    },
    Waiting(Waiting<L>),
    Done,
}

/// The `acquire` future of a remote engine (store `S`, handle `L`), which an engine wraps in
/// its own named type (`RedisAcquire`, `PgAcquire`, `IdbAcquire`): it holds the request until
/// its first poll, so that [`set_timeout`](Self::set_timeout) can still bound the wait and the
/// wait counts from that poll, as the contract says; then it runs the engine's `start` on the
/// request and resolves to what that future resolves to. A request whose checks failed
/// (`checked`) resolves to their error at the first poll, without starting anything.
/// Dropping it drops the engine's future, which withdraws the request. Polled again after it
/// resolved, it answers [`LockError::Unavailable`] rather than panicking.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use alkstore_mem::BoxedFuture;
/// use alkstore_mem::contract::{AcquireRequest, PendingAcquire};
/// use alkstore_mem::LockError;
///
/// /// A toy engine: grants at once to whoever asks for "free", to nobody else.
/// fn start(request: AcquireRequest<()>) -> BoxedFuture<'static, Result<Option<String>, LockError>> {
///     BoxedFuture::new(async move { Ok((request.name == "free").then_some(request.owner)) })
/// }
/// let request = |name: &str| AcquireRequest {
///     store: (),
///     name: name.into(),
///     owner: "me".into(),
///     ttl: Duration::from_secs(1),
///     wait: None,
/// };
/// let granted = PendingAcquire::new(request("free"), Ok(()), start, "ToyAcquire");
/// assert_eq!(futures_lite::future::block_on(granted), Ok(Some("me".to_string())));
/// let refused = PendingAcquire::new(request("x"), Err(LockError::Unavailable { reason: "no".into() }), start, "ToyAcquire");
/// assert!(futures_lite::future::block_on(refused).is_err());
/// ```
#[must_use = "futures do nothing unless polled; dropping this one withdraws the request"]
pub struct PendingAcquire<S, L> {
    state: State<S, L>,
    start: fn(AcquireRequest<S>) -> Waiting<L>,
    engine: &'static str,
}

impl<S, L> PendingAcquire<S, L> {
    /// A request for `start` to run at the first poll, or, when `checked` holds an error, a
    /// future that resolves to it. `engine` names the engine's acquire type in messages.
    pub fn new(
        request: AcquireRequest<S>,
        checked: Result<(), LockError>,
        start: fn(AcquireRequest<S>) -> Waiting<L>,
        engine: &'static str,
    ) -> Self {
        PendingAcquire {
            state: State::Start { request, checked },
            start,
            engine,
        }
    }

    /// Bounds the wait (see [`AcquireRequest::wait`]); once the future has been polled this
    /// changes nothing.
    pub fn set_timeout(&mut self, wait: Duration) {
        if let State::Start { request, .. } = &mut self.state {
            request.wait = Some(wait);
        }
    }
}

impl<S: Unpin, L> Future for PendingAcquire<S, L> {
    type Output = Result<Option<L>, LockError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let State::Start { .. } = self.state {
            let State::Start { request, checked } =
                core::mem::replace(&mut self.state, State::Done)
            else {
                unreachable!("matched just above")
            };
            if let Err(err) = checked {
                return Poll::Ready(Err(err));
            }
            self.state = State::Waiting((self.start)(request));
        }
        match &mut self.state {
            State::Waiting(waiting) => {
                let out = Pin::new(waiting).poll(cx);
                if out.is_ready() {
                    self.state = State::Done;
                }
                out
            }
            State::Start { .. } | State::Done => Poll::Ready(Err(LockError::Unavailable {
                reason: alloc::format!("{} polled after it resolved", self.engine),
            })),
        }
    }
}

impl<S, L> fmt::Debug for PendingAcquire<S, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Start { .. } => "start",
            State::Waiting(_) => "waiting",
            State::Done => "done",
        };
        f.debug_struct(self.engine).field("state", &state).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use futures_lite::future::block_on;

    fn start(request: AcquireRequest<u8>) -> Waiting<(u8, Option<Duration>)> {
        BoxedFuture::new(async move { Ok(Some((request.store, request.wait))) })
    }

    fn request() -> AcquireRequest<u8> {
        AcquireRequest {
            store: 7,
            name: "job".into(),
            owner: "me".into(),
            ttl: Duration::from_secs(1),
            wait: None,
        }
    }

    #[test]
    fn the_bound_set_before_the_first_poll_reaches_the_engine() {
        let mut acquire = PendingAcquire::new(request(), Ok(()), start, "TestAcquire");
        acquire.set_timeout(Duration::from_millis(5));
        assert_eq!(
            block_on(acquire),
            Ok(Some((7, Some(Duration::from_millis(5)))))
        );
    }

    #[test]
    fn a_failed_check_starts_nothing_and_a_second_poll_does_not_panic() {
        fn never(_: AcquireRequest<u8>) -> Waiting<(u8, Option<Duration>)> {
            panic!("started a request whose checks failed")
        }
        let err = LockError::Unavailable {
            reason: "checked".into(),
        };
        let mut acquire = PendingAcquire::new(request(), Err(err.clone()), never, "TestAcquire");
        assert_eq!(block_on(&mut acquire), Err(err));
        let again = block_on(&mut acquire).unwrap_err().to_string();
        assert!(
            again.contains("TestAcquire polled after it resolved"),
            "{again}"
        );
        assert!(alloc::format!("{acquire:?}").contains("done"));
    }
}
