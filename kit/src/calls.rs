//! The contract's operations on [`Locks`], written once over the engine's [`Protocol`]: take,
//! wait for, look up, force-release and list locks.

use core::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use alkstore_mem::validate::{check_name, check_request};
use alkstore_mem::{BoxedFuture, LeaseInfo, LockError, Snapshot};

use crate::acquire::Acquire;
use crate::anchor::Anchor;
use crate::cleanup::Withdrawal;
use crate::lock::Lock;
use crate::protocol::{Protocol, Settings};
use crate::store::{Locks, RemoteFuture};

impl<P: Protocol> Locks<P> {
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
    /// then no lock is held by this call. Its request may still run on the engine later (a
    /// frozen server runs it when it thaws); the call runs on in the background, and a lease
    /// it is granted then is released there, or withdrawn by the request's id if no answer
    /// comes (retried until the engine answers, within bounds: see the crate docs).
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
            let n = name.clone();
            let lock = self
                .call(&name, try_lock(self.clone(), n, owner, ttl))
                .await?;
            if let Some(lock) = &lock {
                // After the handle exists: a subscriber that panics unwinds through its drop,
                // which releases the lease.
                let (name, owner) = (lock.name(), lock.owner());
                alkstore_mem::events::granted(name, owner, lock.token(), lock.deadline(), false);
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
        self.on_valid_name(name, |store, name| async move {
            store.shared.engine.holder(&name).await
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
        let call = self.on_valid_name(name, |store, name| async move {
            store.shared.engine.force_release(&name).await
        });
        BoxedFuture::new(async move {
            let ended = call.await?;
            if let Some(lease) = &ended {
                alkstore_mem::events::force_released(lease);
            }
            Ok(ended)
        })
    }

    /// `op` on `name` in a task of its own (see [`Locks::call`]), or `Ok(None)` without a
    /// round trip when `name` is not a valid lock name.
    fn on_valid_name<T, F>(
        &self,
        name: &str,
        op: impl FnOnce(Locks<P>, String) -> F + Send + 'static,
    ) -> RemoteFuture<'_, Option<T>>
    where
        T: Send + 'static,
        F: Future<Output = Result<Option<T>, LockError>> + Send + 'static,
    {
        let valid = check_name(name, &self.config().limits()).is_ok();
        let name = name.to_owned();
        BoxedFuture::new(async move {
            if !valid {
                return Ok(None);
            }
            let op = op(self.clone(), name.clone());
            self.call(&name, op).await
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

/// [`Locks::try_lock`]'s round trip, run by [`Locks::call`].
async fn try_lock<P: Protocol>(
    store: Locks<P>,
    name: String,
    owner: String,
    ttl: Duration,
) -> Result<Option<Lock<P>>, LockError> {
    // Armed while the answer is unknown: a call that fails or times out withdraws its
    // request (a grant whose reply was lost ends at once).
    let request = Withdrawal::new(store, name, crate::new_id());
    let sent = Instant::now();
    let engine = &request.store.shared.engine;
    let reply = engine
        .try_lock(&request.name, &owner, ttl, &request.id)
        .await?;
    let (store, name) = request.disarm();
    let Some(grant) = reply.value else {
        return Ok(None);
    };
    let anchor = Anchor::new(reply.now, sent);
    Ok(Some(Lock::new(store, name, owner, grant, ttl, anchor)))
}
