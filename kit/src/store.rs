//! [`Locks`]: an engine's store, with the contract's operations written once over its
//! [`Protocol`].

use core::fmt;
use core::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use alkstore_mem::validate::{check_name, check_request};
use alkstore_mem::{BoxedFuture, LeaseInfo, LockError, Snapshot};

use crate::acquire::Acquire;
use crate::anchor::Anchor;
use crate::call::detached;
use crate::cleanup::{Cleanup, Undo};
use crate::lock::Lock;
use crate::protocol::{Job, Protocol, Settings};
use crate::wake::{Registration, Wake};

/// The future of a one-shot call ([`Locks::try_lock`], [`Lock::renew`], …): a named type, so
/// that it can be stored and `select!`ed.
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

    /// Takes the lock `name` for `owner` until `ttl` from now (on the engine's clock), if it
    /// is free.
    ///
    /// Resolves to `Ok(Some(lock))` when granted, with a fencing token larger than every
    /// token granted before it; `Ok(None)` when a live lease holds the name (the same
    /// owner's included) or waiters are queued for it (the first of them is handed the lease
    /// instead).
    ///
    /// Cancel-safe: dropping the future at any point leaves no lease held by no handle. The
    /// call runs in a task of its own; a grant that arrives after its caller left is
    /// released there, and a call that got no answer withdraws its request by id.
    ///
    /// # Errors
    /// [`LockError::InvalidName`], [`LockError::ReservedName`], [`LockError::InvalidOwner`],
    /// [`LockError::InvalidTtl`] before any round trip, exactly as the core's;
    /// [`LockError::Unavailable`] when the engine does not answer within the `io_timeout`:
    /// then no lock is held by this call.
    pub fn try_lock(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
    ) -> RemoteFuture<'_, Option<Lock<P>>> {
        let checked = check_request(name, owner, ttl, &self.config().limits());
        let (name, owner) = (name.to_owned(), owner.to_owned());
        BoxedFuture::new(async move {
            checked?;
            let store = self.clone();
            let (n, o) = (name.clone(), owner.clone());
            let lock = self
                .call(&name, async move {
                    let rid = crate::new_id();
                    // Armed while the answer is unknown: a call that fails or times out
                    // withdraws its request (a grant whose reply was lost ends at once).
                    let undo = Undo::new(Cleanup::withdraw(&store, &n, &rid, true));
                    let sent = Instant::now();
                    let reply = store.shared.engine.try_lock(&n, &o, ttl, &rid).await?;
                    undo.disarm();
                    let Some(grant) = reply.value else {
                        return Ok(None);
                    };
                    let anchor = Anchor::new(reply.now, sent);
                    Ok(Some(Lock::new(store, n, o, grant, ttl, anchor)))
                })
                .await?;
            if let Some(lock) = &lock {
                // After the handle exists: a subscriber that panics unwinds through its drop,
                // which releases the lease.
                alkstore_mem::events::granted(&name, &owner, lock.token(), lock.deadline(), false);
            }
            Ok(lock)
        })
    }

    /// Waits for the lock `name`, then holds it for `ttl`: without limit, unless bounded with
    /// [`Acquire::timeout`].
    ///
    /// Waiters on a name are served in arrival order across every process sharing the
    /// engine: a release hands the lease to the first waiter inside the release's own
    /// operation, and a `try_lock` arriving in between gets `None`. Waiters sleep until a
    /// wake-up (and once at the holder's deadline, in case its lease lapses instead); they do
    /// not poll. Dropping the future leaves the queue and passes on a lease already handed to
    /// it.
    ///
    /// # Errors
    /// Those of [`try_lock`](Self::try_lock), at the first poll.
    pub fn acquire(&self, name: &str, owner: &str, ttl: Duration) -> Acquire<P> {
        let checked = check_request(name, owner, ttl, &self.config().limits());
        Acquire::new(self.clone(), name, owner, ttl, checked)
    }

    /// The live lease on `name`: `Ok(None)` when the name is free, its lease lapsed, or
    /// `name` is not a valid lock name (then without a round trip). The deadline is on the
    /// engine's clock.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the engine does not answer within the `io_timeout`.
    pub fn holder(&self, name: &str) -> RemoteFuture<'_, Option<LeaseInfo>> {
        let valid = check_name(name, &self.config().limits()).is_ok();
        let name = name.to_owned();
        BoxedFuture::new(async move {
            if !valid {
                return Ok(None);
            }
            let (store, n) = (self.clone(), name.clone());
            self.call(&name, async move { store.shared.engine.holder(&n).await })
                .await
        })
    }

    /// Frees `name` whoever holds it, as an operator frees a stuck lock, and resolves to the
    /// lease it ended: `Ok(None)` when the name had no live lease (or is not a valid name:
    /// then without a round trip).
    ///
    /// The lease goes to the first waiter, if any, with a larger token. The old holder's
    /// renewals fail with [`LockError::Expired`], its `release` answers `false`, and its
    /// pending `keep_alive` and `lapsed` are woken to find out at once.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the engine does not answer within the `io_timeout`.
    pub fn force_release(&self, name: &str) -> RemoteFuture<'_, Option<LeaseInfo>> {
        let valid = check_name(name, &self.config().limits()).is_ok();
        let name = name.to_owned();
        BoxedFuture::new(async move {
            if !valid {
                return Ok(None);
            }
            let (store, n) = (self.clone(), name.clone());
            let ended = self
                .call(
                    &name,
                    async move { store.shared.engine.force_release(&n).await },
                )
                .await?;
            if let Some(lease) = &ended {
                alkstore_mem::events::force_released(lease);
            }
            Ok(ended)
        })
    }

    /// The held leases and the queued waiters of every name, for operators and admin pages:
    /// leases sorted by name, waiters by name and then in the order they will be served.
    /// Each name is a consistent view; the whole may be read in steps (see the engine's docs).
    /// Unlike the other calls, it runs in the caller's task, bounded by the engine per step
    /// (not by one `io_timeout` for the whole).
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the engine does not answer a step within the
    /// `io_timeout`, or with no tokio runtime on the thread.
    pub fn snapshot(&self) -> RemoteFuture<'_, Snapshot> {
        BoxedFuture::new(async move {
            // The engine's I/O needs a runtime: without one, refuse as every call does.
            crate::call::need_runtime(P::NAME)?;
            // A snapshot may take several steps, each bounded by the engine: not the kit's
            // single io_timeout.
            self.shared.engine.snapshot().await
        })
    }

    /// Test builds of an engine: moves its lease clock forward by `by` and wakes every
    /// sleeper of every process sharing it, so that each re-checks at the new time.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the engine does not answer within the `io_timeout`, or
    /// was built without its test clock.
    #[doc(hidden)]
    pub async fn advance_test_clock(&self, by: Duration) -> Result<(), LockError> {
        crate::call::need_runtime(P::NAME)?;
        self.shared.engine.advance_test_clock(by).await
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
