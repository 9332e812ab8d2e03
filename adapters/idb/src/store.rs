//! [`IdbLocks`]: the database, the config, and the helpers its calls share (one row, one
//! transaction). The calls themselves are in `calls.rs`.

use core::fmt;
use core::future::Future;
use core::time::Duration;

use alkstore_mem::LockError;

use crate::Shared;
use crate::config::IdbConfig;
use crate::sys::{self, OnCommit, Scope, TxError};
use crate::tx::ops::Ctx;
use crate::tx::row::Row;

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

    /// Whether [`IdbLock::keep_alive`](crate::IdbLock::keep_alive) can keep a lease of `ttl`:
    /// a renewal may take up to the [`io_timeout`](IdbConfig::with_io_timeout), so keep-alive
    /// needs a ttl of at least twice that (2 s with the default). Call it before acquiring a
    /// lease you mean to keep alive, so that the ttl is refused before anything is held rather
    /// than when keep-alive starts.
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
}

impl fmt::Debug for IdbLocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdbLocks")
            .field("database", &self.inner.db)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}
