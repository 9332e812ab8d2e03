//! [`Locks`]: an engine's store: its engine, config and wake-ups, and the helpers its calls
//! share (a detached call, a clean-up job). The contract's operations are in `calls.rs`.

use core::fmt;
use core::future::Future;
use std::sync::Arc;

use alkstore_mem::{BoxedFuture, LockError};

use crate::call::detached;
use crate::protocol::{Job, Protocol, Settings};
use crate::wake::{Registration, Wake};

/// The future of a one-shot call ([`Locks::try_lock`], [`Lock::renew`](crate::Lock::renew),
/// …): a named type, so that it can be stored and `select!`ed.
pub type RemoteFuture<'a, T> = BoxedFuture<'a, Result<T, LockError>>;

/// Named exclusive locks with TTL leases and fencing tokens, kept by engine `P` (a server, a
/// database, a file): what `RedisLocks`, `PgLocks` and `SqliteLocks` are.
///
/// Cheap to clone: clones share the engine's connections and one listener of wake-ups. Every
/// operation validates its input locally with the core's checks, then runs one operation of
/// the engine's [`Protocol`] (one script, one function, one transaction) that reads the
/// engine's clock, decides and writes atomically, in a task of its own (so that a caller
/// that stops waiting never cuts a call in half: see [`try_lock`](Self::try_lock)).
///
/// A store is bound to the tokio runtime it was connected on: its connections' tasks and the
/// listener run there. Use it from that runtime.
pub struct Locks<P: Protocol> {
    pub(crate) shared: Arc<Shared<P>>,
}

pub(crate) struct Shared<P> {
    pub(crate) engine: P,
    pub(crate) wake: Wake,
}

impl<P: Protocol> Clone for Locks<P> {
    fn clone(&self) -> Self {
        Locks {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<P: Protocol> Locks<P> {
    /// Connects to the engine at `url` with its default config.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the engine cannot be reached within the `io_timeout`,
    /// the url is malformed, or the engine refuses what it finds there.
    pub async fn connect(url: &str) -> Result<Self, LockError> {
        Self::connect_with(url, P::Config::default()).await
    }

    /// Connects to the engine at `url` with `config`.
    ///
    /// # Errors
    /// As [`connect`](Self::connect), and a config the engine refuses.
    pub async fn connect_with(url: &str, config: P::Config) -> Result<Self, LockError> {
        Ok(Self::from_engine(P::connect(url, config).await?))
    }

    /// A store over an engine already connected.
    pub fn from_engine(engine: P) -> Self {
        Locks {
            shared: Arc::new(Shared {
                engine,
                wake: Wake::new(),
            }),
        }
    }

    /// The engine, for what only it offers.
    pub fn engine(&self) -> &P {
        &self.shared.engine
    }

    /// The configuration this store runs with.
    pub fn config(&self) -> &P::Config {
        self.shared.engine.config()
    }

    /// Runs `op` in a task of its own (its first poll here) within the `io_timeout` (see [`detached`]); a failure
    /// is reported as the core's `unavailable` event on `name`.
    pub(crate) async fn call<T: Send + 'static>(
        &self,
        name: &str,
        op: impl Future<Output = Result<T, LockError>> + Send + 'static,
    ) -> Result<T, LockError> {
        let answer = detached(P::NAME, self.config().io_timeout(), op).await;
        if let Err(err @ LockError::Unavailable { .. }) = &answer {
            alkstore_mem::events::unavailable(name, err);
        }
        answer
    }

    /// Runs a clean-up job (best effort).
    pub(crate) async fn run_job(&self, job: &Job) -> Result<(), LockError> {
        let engine = &self.shared.engine;
        let run = async {
            match job {
                Job::Release { name, token, rid } => {
                    engine.release(name, *token, rid).await.map(drop)
                }
                Job::Withdraw {
                    name,
                    id,
                    unanswered,
                } => engine.withdraw(name, id, *unanswered).await,
            }
        };
        let io = self.config().io_timeout();
        tokio::time::timeout(io, run)
            .await
            .unwrap_or_else(|_| Err(crate::unavailable("cleanup timed out")))
    }

    /// Registers `id` for wake-ups.
    pub(crate) fn register(&self, id: String) -> Registration {
        let engine = &self.shared.engine;
        self.shared.wake.register(id, || engine.listener())
    }

    /// How many sleepers this store has registered: a test's check that nothing is left
    /// behind by dropped waits, keep-alives and watches.
    #[doc(hidden)]
    pub fn sleepers_for_test(&self) -> usize {
        self.shared.wake.sleepers()
    }
}

impl<P: Protocol> fmt::Debug for Locks<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Locks")
            .field("engine", &P::NAME)
            .field("config", self.config())
            .finish_non_exhaustive()
    }
}
