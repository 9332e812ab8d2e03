//! The calls of [`IdbLocks`] that run one transaction each: take, wait for, look up, list and
//! force-release locks.

use core::future::ready;
use core::time::Duration;

use alkstore_mem::validate::{check_name, check_request};
use alkstore_mem::{LeaseInfo, LockError, Snapshot, Waiting};

use crate::acquire::IdbAcquire;
use crate::cancel::CancelGuard;
use crate::lock::IdbLock;
use crate::store::IdbLocks;
use crate::sys::{self, Scope};
use crate::tx::ops;
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

    /// The operator's view: every live lease (sorted by name) and every live waiter (by name,
    /// then in the order they will be served), across every context sharing the database.
    /// One transaction over all rows; it settles each (a lapsed lease goes to its first
    /// waiter, as any operation on that name would do), so what it shows is what the next
    /// operation would find.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the transaction fails or times out.
    ///
    /// # Example
    /// ```no_run
    /// # async fn run(locks: alkstore_idb::IdbLocks) -> Result<(), alkstore_idb::LockError> {
    /// let snapshot = locks.snapshot().await?;
    /// for lease in &snapshot.held {
    ///     println!("{} held by {} (token {})", lease.name(), lease.owner(), lease.token());
    /// }
    /// for waiter in &snapshot.waiting {
    ///     println!("{} waits for {}", waiter.owner, waiter.name);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn snapshot(&self) -> IdbFuture<'static, Snapshot> {
        let store = self.clone();
        BoxedFuture::new(async move {
            let (mut held, mut waiting, contexts) = store.snapshot_tx().await?;
            if store.inner.db.confirm_dead(contexts).await {
                // A context in it is dead: its leases and tickets are over; look again.
                (held, waiting, _) = store.snapshot_tx().await?;
            }
            // By name as Rust orders strings (IndexedDB orders keys by UTF-16 code units);
            // stable, so each name's waiters keep their queue order.
            held.sort_by(|a, b| a.name().cmp(b.name()));
            waiting.sort_by(|a, b| a.name.cmp(&b.name));
            let mut snapshot = Snapshot::default();
            snapshot.held = held;
            snapshot.waiting = waiting;
            Ok(snapshot)
        })
    }

    /// One snapshot transaction: the live leases, the live waiters, and the context ids the
    /// rows record.
    async fn snapshot_tx(&self) -> Result<(Vec<LeaseInfo>, Vec<Waiting>, Vec<String>), LockError> {
        let tx = self.inner.db.transact(Scope::All, |rows, cx| {
            let mut held = Vec::new();
            let mut waiting = Vec::new();
            let mut contexts: Vec<String> = Vec::new();
            for (name, row) in rows.iter_mut() {
                ops::settle(row, cx);
                if let Some(l) = &row.lease {
                    held.push(LeaseInfo::new(name, &l.owner, l.token, stamp(l.deadline)));
                }
                for ticket in ops::waiting(row, cx) {
                    waiting.push(Waiting::new(name, &ticket.owner));
                }
                for ctx in ops::contexts(row) {
                    if !contexts.iter().any(|c| c == ctx) {
                        contexts.push(ctx.into());
                    }
                }
            }
            (held, waiting, contexts)
        });
        Ok(tx.await?.0)
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

    /// Test builds only (feature `test-clock`): moves this database's clock forward by `by`
    /// for every context that shares it, and wakes every sleeper of every context so that
    /// each re-checks at the new time.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the transaction fails or times out.
    #[cfg(feature = "test-clock")]
    pub fn advance_test_clock(&self, by: Duration) -> IdbFuture<'static, ()> {
        let by = micros(by);
        let tx = self.inner.db.transact(Scope::Meta, move |_, cx| {
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
