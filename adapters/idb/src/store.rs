//! [`IdbLocks`]: the database, the config, and the calls that run one transaction each.

use core::fmt;
use core::future::{Future, ready};
use core::time::Duration;

use alkstore_mem::validate::{check_name, check_request};
use alkstore_mem::{LeaseInfo, LockError, Snapshot, Waiting};

use crate::acquire::IdbAcquire;
use crate::cancel::CancelGuard;
use crate::config::IdbConfig;
use crate::lock::IdbLock;
use crate::sys::{self, OnCommit, Scope, TxError};
use crate::tx::ops::{self, Ctx};
use crate::tx::row::Row;
use crate::util::{micros, stamp};
use crate::{BoxedFuture, IdbFuture, Shared};

/// Named exclusive locks with TTL leases and fencing tokens, shared by every tab and worker
/// of an origin through one IndexedDB database.
///
/// Cheap to clone: clones share one connection and one `BroadcastChannel`. Every operation
/// checks its input locally with the core's checks, then runs one `readwrite` transaction
/// that reads the clock, decides and writes (see the [crate docs](crate) for the model).
/// Stores in several contexts that open the same database name share its locks.
///
/// # Example
/// ```no_run
/// use alkstore_idb::IdbLocks;
/// use core::time::Duration;
///
/// # async fn run() -> Result<(), alkstore_idb::LockError> {
/// let locks = IdbLocks::open("my-app-locks").await?;
/// if let Some(lock) = locks.try_lock("sync/outbox", "tab-1", Duration::from_secs(10)).await? {
///     // ... flush the outbox, sending lock.token() with every write ...
///     lock.release().await?;
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct IdbLocks {
    pub(crate) inner: Shared<Inner>,
}

pub(crate) struct Inner {
    pub(crate) db: sys::Db,
    pub(crate) config: IdbConfig,
}

impl IdbLocks {
    /// Opens (creating on first use) the IndexedDB database `db_name` with the default
    /// [`IdbConfig`]. Every context of the origin that opens the same name shares its locks.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when IndexedDB is absent (some embedded or privacy modes),
    /// forbidden (an opaque origin, storage blocked), blocked by another connection, or does
    /// not open within the `io_timeout`; and on any target but `wasm32`, always.
    ///
    /// # Example
    /// ```
    /// use alkstore_idb::IdbLocks;
    ///
    /// # futures_lite::future::block_on(async {
    /// match IdbLocks::open("my-app-locks").await {
    ///     Ok(locks) => { /* in a browser or a worker */ }
    ///     Err(err) => eprintln!("no shared locks here: {err}"), // natively: always
    /// }
    /// # });
    /// ```
    pub async fn open(db_name: &str) -> Result<IdbLocks, LockError> {
        Self::open_with(db_name, IdbConfig::default()).await
    }

    /// Opens the database `db_name` with `config`.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    ///
    /// # Example
    /// ```no_run
    /// use alkstore_idb::{IdbConfig, IdbLocks};
    /// use core::time::Duration;
    ///
    /// # async fn run() -> Result<(), alkstore_idb::LockError> {
    /// let config = IdbConfig::new().with_io_timeout(Duration::from_millis(500));
    /// let locks = IdbLocks::open_with("my-app-locks", config).await?;
    /// # drop(locks); Ok(())
    /// # }
    /// ```
    pub async fn open_with(db_name: &str, config: IdbConfig) -> Result<IdbLocks, LockError> {
        let db = sys::open(db_name, &config).await?;
        Ok(IdbLocks {
            #[allow(clippy::arc_with_non_send_sync)]
            inner: Shared::new(Inner { db, config }),
        })
    }

    /// The configuration this store runs with.
    pub fn config(&self) -> &IdbConfig {
        &self.inner.config
    }

    /// This context's id in the rows of this database: every lease and ticket of this
    /// context records it, and holds the Web Lock `alkstore:ctx:<database>:<id>` for as long
    /// as the context lives, so that other contexts can tell when it is dead and take over at
    /// once. `None` where Web Locks are missing (an insecure origin, an old browser) or the
    /// lock was taken from this context: its leases then last their ttl, as on every target
    /// but wasm32.
    pub fn context_id(&self) -> Option<String> {
        Some(self.inner.db.context_id()).filter(|id| !id.is_empty())
    }

    /// Whether [`IdbLock::keep_alive`] can keep a lease of `ttl`: a renewal may take up to
    /// the [`io_timeout`](IdbConfig::with_io_timeout), so keep-alive needs a ttl of at least
    /// twice that (2 s with the default). Call it before acquiring a lease you mean to keep
    /// alive, so that the ttl is refused before anything is held rather than when
    /// keep-alive starts.
    ///
    /// # Errors
    /// [`LockError::InvalidTtl`] with [`TtlProblem::TooShortToKeepAlive`](alkstore_mem::TtlProblem)
    /// for a shorter ttl, and with `Zero` for a zero one.
    ///
    /// # Example
    /// ```no_run
    /// # use core::time::Duration;
    /// # async fn run(locks: alkstore_idb::IdbLocks) -> Result<(), alkstore_idb::LockError> {
    /// let ttl = Duration::from_secs(5);
    /// locks.check_keep_alive_ttl(ttl)?; // refused here, before anything is held
    /// if let Some(lock) = locks.try_lock("leader", "tab-1", ttl).await? {
    ///     let lost = lock.keep_alive(Duration::ZERO).await; // only a lost lease ends it
    ///     eprintln!("no longer leader: {lost}");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn check_keep_alive_ttl(&self, ttl: Duration) -> Result<(), LockError> {
        if ttl.is_zero() {
            return Err(crate::util::zero_ttl());
        }
        let io = self.inner.config.io_timeout();
        if ttl < io.saturating_mul(2) {
            return Err(crate::util::too_short_to_keep_alive(ttl, io));
        }
        Ok(())
    }

    /// The name of the IndexedDB database.
    pub fn database_name(&self) -> &str {
        self.inner.db.name()
    }

    /// Runs `body` on the row of `name` in one transaction, sent now (polled or not).
    pub(crate) fn on_row<R, B>(
        &self,
        name: &str,
        body: B,
    ) -> impl Future<Output = Result<R, LockError>> + 'static
    where
        R: 'static,
        B: FnOnce(&mut Row, &mut Ctx<'_>) -> R + 'static,
    {
        let tx = self.on_row_then(name, body, None);
        async move { Ok(tx.await?) }
    }

    /// As [`on_row`](Self::on_row), with `on_commit` run on the answer once the transaction
    /// committed (even if the future was dropped meanwhile), and the failure kept as a
    /// [`TxError`] (whether it timed out).
    pub(crate) fn on_row_then<R, B>(
        &self,
        name: &str,
        body: B,
        on_commit: Option<OnCommit<R>>,
    ) -> impl Future<Output = Result<R, TxError>> + 'static
    where
        R: 'static,
        B: FnOnce(&mut Row, &mut Ctx<'_>) -> R + 'static,
    {
        let tx = self.inner.db.transact_then(
            Scope::Row(name.into()),
            move |rows, cx| body(&mut rows[0].1, cx),
            on_commit,
        );
        async move { Ok(tx.await?.0) }
    }

    /// The engine's time now, as this context estimates it (µs): the later of `Date.now()`
    /// (plus the test offset last seen) and this context's last transaction's time carried
    /// forward by the monotonic clock. A lease this says is over may still look live to a
    /// context whose clock stepped back, never the other way round.
    pub(crate) fn now_us(&self) -> u64 {
        self.inner.db.now_us()
    }

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
    /// [`waiter_heartbeat`](IdbConfig::with_waiter_heartbeat). Dropping the future leaves the
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

impl fmt::Debug for IdbLocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdbLocks")
            .field("database", &self.inner.db)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}
