//! The calls of [`IdbLocks`] that run one transaction each: take, wait for, look up, steal and
//! force-release locks (listing them is in `snapshot.rs`).

use core::future::ready;
use core::time::Duration;

use alkstore_mem::validate::{check_name, check_request};
use alkstore_mem::{LeaseInfo, LockError};

use crate::acquire::IdbAcquire;
use crate::cancel::CancelGuard;
use crate::lock::IdbLock;
use crate::store::IdbLocks;
use crate::sys;
use crate::tx::{ops, steal};
use crate::util::{micros, stamp};
use crate::{BoxedFuture, IdbFuture};

impl IdbLocks {
    /// Takes the lock `name` for `owner` until `ttl` from now, if it is free.
    ///
    /// Resolves to `Ok(Some(lock))` when granted, with a fencing token larger than any this
    /// database granted before; `Ok(None)` when a live lease holds the name (the same
    /// owner's included) or waiters are queued for it (the first of them is handed the
    /// lease instead). A name held by a context that is dead (closed, navigated away,
    /// crashed, terminated) is not busy: when the holder's context is not known yet, one
    /// `navigator.locks.query()` tells, and the name is taken in a second transaction. The
    /// transaction is sent when this is called; dropping the future before it resolved
    /// gives a lease it was granted back.
    ///
    /// # Errors
    /// [`LockError::InvalidName`], [`LockError::ReservedName`], [`LockError::InvalidOwner`],
    /// [`LockError::InvalidTtl`] before anything is sent, exactly as the core's;
    /// [`LockError::Unavailable`] when the transaction fails or does not finish within the
    /// `io_timeout` (it is then aborted: no lock is held by this call).
    ///
    /// # Example
    /// ```no_run
    /// # use alkstore_idb::IdbLocks;
    /// # use core::time::Duration;
    /// # async fn run(locks: IdbLocks) -> Result<(), alkstore_idb::LockError> {
    /// match locks.try_lock("report", "tab-1", Duration::from_secs(30)).await? {
    ///     Some(lock) => { /* ours, with lock.token() */ lock.release().await?; }
    ///     None => { /* another tab or worker has it */ }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_lock(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
    ) -> IdbFuture<'static, Option<IdbLock>> {
        if let Err(err) = check_request(name, owner, ttl, &self.inner.config.limits()) {
            return BoxedFuture::new(ready(Err(err)));
        }
        let first = self.send_try_lock(name, owner, ttl);
        let (store, name, owner) = (self.clone(), name.to_owned(), owner.to_owned());
        BoxedFuture::new(async move {
            let (granted, holder_ctx) = match first.await? {
                Ok(granted) => (Some(granted), String::new()),
                Err(ctx) => (None, ctx),
            };
            let granted = match granted {
                Some(granted) => Some(granted),
                // Busy: if the holder's context is dead (its presence Web Lock gone), its
                // lease is over: once more, knowing it.
                None if store.inner.db.confirm_dead(vec![holder_ctx]).await => {
                    store.send_try_lock(&name, &owner, ttl).await?.ok()
                }
                None => None,
            };
            Ok(granted.map(|g| IdbLock::new(store, name, owner, g.token, g.deadline, ttl)))
        })
    }

    /// One try_lock transaction, sent now: the grant, or the busy holder's context id.
    fn send_try_lock(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
    ) -> impl Future<Output = Result<Result<ops::Granted, String>, LockError>> + 'static {
        let rid = sys::new_id();
        let ttl_us = micros(ttl);
        let (o, r) = (owner.to_owned(), rid.clone());
        let tx = self.on_row(name, move |row, cx| {
            ops::try_lock(row, cx, &o, ttl_us, &r).map_err(|_| {
                row.lease
                    .as_ref()
                    .map_or_else(String::new, |l| l.ctx.clone())
            })
        });
        let mut guard = CancelGuard::new(self, name, rid);
        async move {
            let answer = tx.await;
            guard.disarm();
            answer
        }
    }

    /// Waits for the lock `name`, then holds it for `ttl`: without limit, unless bounded with
    /// [`IdbAcquire::timeout`].
    ///
    /// Waiters are served in arrival order across every tab and worker sharing the database:
    /// a release hands the lease to the first waiter inside its transaction and wakes it over
    /// the `BroadcastChannel`, and a `try_lock` arriving in between gets `None`. A waiter
    /// also wakes the instant the context of the holder, or of a waiter ahead of it, dies
    /// (see [`context_id`](Self::context_id)), and the first waiter at the holder's deadline
    /// (for a holder that stopped without dying); the others refresh their ticket every
    /// [`waiter_heartbeat`](crate::IdbConfig::with_waiter_heartbeat). Dropping the future leaves the
    /// queue and passes on a lease already handed to it.
    ///
    /// # Errors
    /// Those of [`try_lock`](Self::try_lock), at the first poll.
    ///
    /// # Example
    /// ```no_run
    /// # use alkstore_idb::IdbLocks;
    /// # use core::time::Duration;
    /// # async fn run(locks: IdbLocks) -> Result<(), alkstore_idb::LockError> {
    /// let waited = locks
    ///     .acquire("invoice/1001", "worker-2", Duration::from_secs(10))
    ///     .timeout(Duration::from_secs(5))
    ///     .await?;
    /// if let Some(lock) = waited {
    ///     lock.release().await?;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn acquire(&self, name: &str, owner: &str, ttl: Duration) -> IdbAcquire {
        let checked = check_request(name, owner, ttl, &self.inner.config.limits());
        IdbAcquire::new(self.clone(), name, owner, ttl, checked)
    }

    /// The live lease on `name`: `Ok(None)` when the name is free, its lease lapsed, or
    /// `name` is not a valid lock name (then without a transaction). Exactly the holder's
    /// [`IdbLock::info`], deadline included (µs precision, ns since the Unix epoch).
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the transaction fails or times out.
    ///
    /// # Example
    /// ```no_run
    /// # use alkstore_idb::IdbLocks;
    /// # async fn run(locks: IdbLocks) -> Result<(), alkstore_idb::LockError> {
    /// if let Some(lease) = locks.holder("invoice/1001").await? {
    ///     println!("{} holds it with token {}", lease.owner(), lease.token());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn holder(&self, name: &str) -> IdbFuture<'static, Option<LeaseInfo>> {
        if check_name(name, &self.inner.config.limits()).is_err() {
            return BoxedFuture::new(ready(Ok(None)));
        }
        let (store, name) = (self.clone(), name.to_owned());
        let first = self.on_row(&name, ops::holder);
        BoxedFuture::new(async move {
            let mut lease = first.await?;
            if let Some(ctx) = lease.as_ref().map(|l| l.ctx.clone()) {
                // A dead context's lease is over: look again, knowing it.
                if store.inner.db.confirm_dead(vec![ctx]).await {
                    lease = store.on_row(&name, ops::holder).await?;
                }
            }
            Ok(lease.map(|l| LeaseInfo::new(&name, &l.owner, l.token, stamp(l.deadline))))
        })
    }

    /// Ends the live lease on `name` whoever holds it (an operator's tool), and returns the
    /// lease it ended: `Ok(None)` when the name had no live lease or is not a valid name.
    /// The name goes to the first waiter with a larger token; the old holder's renewals and
    /// keep-alive end with `Expired`, its release answers `false`, and its `lapsed()`
    /// resolves (over the `BroadcastChannel`, in whichever context it runs).
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the transaction fails or times out.
    ///
    /// # Example
    /// ```no_run
    /// # use alkstore_idb::IdbLocks;
    /// # async fn run(locks: IdbLocks) -> Result<(), alkstore_idb::LockError> {
    /// if let Some(ended) = locks.force_release("invoice/1001").await? {
    ///     println!("took invoice/1001 from {}", ended.owner());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn force_release(&self, name: &str) -> IdbFuture<'static, Option<LeaseInfo>> {
        if check_name(name, &self.inner.config.limits()).is_err() {
            return BoxedFuture::new(ready(Ok(None)));
        }
        let n = name.to_owned();
        let tx = self.on_row(name, move |row, cx| ops::force_release(row, cx, &n));
        let name = name.to_owned();
        BoxedFuture::new(async move {
            Ok(tx
                .await?
                .map(|l| LeaseInfo::new(&name, &l.owner, l.token, stamp(l.deadline))))
        })
    }

    /// Takes the lock `name` for `owner` until `ttl` from now, **whoever holds it**, ahead of
    /// every waiter: Web Locks' `steal: true`, in one transaction. The live lease (if any)
    /// ends, its holder is told as by [`force_release`](Self::force_release) (its
    /// `keep_alive`/`lapsed` end with `Expired`, in whichever context it runs; its release
    /// answers `false`), and the name is granted to this call in the same transaction, with a
    /// larger token: no other call can take it in between. The queue stays as it was and is
    /// served after this lease; a waiter that had been handed the name but had not picked it
    /// up yet goes back to the head of the queue. Dropping the future before it resolved
    /// gives the lease back.
    ///
    /// # Errors
    /// The validation errors of [`try_lock`](Self::try_lock) before anything is sent;
    /// [`LockError::Unavailable`] when the transaction fails or times out (it then changed
    /// nothing: the holder keeps its lease).
    ///
    /// # Example
    /// ```no_run
    /// # use alkstore_idb::IdbLocks;
    /// # use core::time::Duration;
    /// # async fn run(locks: IdbLocks) -> Result<(), alkstore_idb::LockError> {
    /// // The old leader is stuck: take over now, with a token its late writes cannot match.
    /// let lock = locks.steal("leader", "tab-2", Duration::from_secs(10)).await?;
    /// println!("leader with token {}", lock.token());
    /// # Ok(())
    /// # }
    /// ```
    pub fn steal(&self, name: &str, owner: &str, ttl: Duration) -> IdbFuture<'static, IdbLock> {
        if let Err(err) = check_request(name, owner, ttl, &self.inner.config.limits()) {
            return BoxedFuture::new(ready(Err(err)));
        }
        let rid = sys::new_id();
        let ttl_us = micros(ttl);
        let (n, o, r) = (name.to_owned(), owner.to_owned(), rid.clone());
        let tx = self.on_row(name, move |row, cx| {
            steal::steal(row, cx, &n, &o, ttl_us, &r).granted
        });
        let mut guard = CancelGuard::new(self, name, rid);
        let (store, name, owner) = (self.clone(), name.to_owned(), owner.to_owned());
        BoxedFuture::new(async move {
            let granted = tx.await;
            guard.disarm();
            let g = granted?;
            Ok(IdbLock::new(store, name, owner, g.token, g.deadline, ttl))
        })
    }

    /// Test builds only (feature `test-clock`): moves this database's clock forward by `by`
    /// for every context that shares it, and wakes every sleeper of every context so that
    /// each re-checks at the new time.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the transaction fails or times out.
    #[cfg(feature = "test-clock")]
    pub fn advance_test_clock(&self, by: Duration) -> IdbFuture<'static, ()> {
        let by = micros(by);
        let tx = self.inner.db.transact(sys::Scope::Meta, move |_, cx| {
            cx.meta.offset = cx.meta.offset.saturating_add(by);
        });
        let store = self.clone();
        BoxedFuture::new(async move {
            tx.await?;
            store.inner.db.post_all();
            Ok(())
        })
    }
}
