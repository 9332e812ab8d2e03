//! [`PgLocks`]: the pool, the schema, and the calls that run one server function each.

use core::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore_mem::validate::{check_name, check_request};
use alkstore_mem::{BoxedFuture, LeaseInfo, LockError, Snapshot, Waiting};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::acquire::PgAcquire;
use crate::config::PgConfig;
use crate::lock::PgLock;
use crate::pool::{Fail, Op, Pool, unavailable};
use crate::sql::Schema;
use crate::wake::Wake;
use crate::wire::Anchor;
use crate::wire::{field, from_us, lease_row, micros, numbers, owner_from_sql, owner_to_sql};

/// The future of a one-shot call to PostgreSQL ([`PgLocks::try_lock`],
/// [`PgLock::renew`](crate::PgLock::renew), …): a named type, so that it can be stored and
/// `select!`ed.
pub type PgFuture<'a, T> = BoxedFuture<'a, Result<T, LockError>>;

/// Named exclusive locks with TTL leases and fencing tokens, kept in PostgreSQL.
///
/// Cheap to clone: clones share one connection pool and one listening connection. Every
/// operation validates its input locally with the core's checks, then calls one plpgsql
/// function of the store's schema that reads the server's `clock_timestamp()`, decides under
/// the lease row's lock and writes, in one round trip. See the [crate docs](crate) for the
/// model and the guarantees.
///
/// A store is bound to the tokio runtime it was connected on: its connections' tasks, the
/// listener of wake-ups and the 30 s sweep run there. Use it from that runtime. Called from
/// another runtime while that one is not being driven, its calls time out (`Unavailable`
/// after the `io_timeout`) even though the server answers; once that runtime is dropped, its
/// connections are opened again on the caller's runtime, but its sweep has stopped (other
/// stores on the schema still sweep it).
///
/// # Example
/// ```no_run
/// use alkstore_pg::{PgConfig, PgLocks};
/// use std::time::Duration;
///
/// # async fn run() -> Result<(), alkstore_mem::LockError> {
/// let locks = PgLocks::connect_with(
///     "postgres://app@127.0.0.1:5432/app",
///     PgConfig::new().with_schema("billing_locks"),
/// )
/// .await?;
/// let held = locks.try_lock("invoice/1001", "worker-1", Duration::from_secs(10)).await?;
/// assert!(held.is_some() || locks.holder("invoice/1001").await?.is_some());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct PgLocks {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) pool: Pool,
    pub(crate) config: PgConfig,
    pub(crate) schema: Schema,
    pub(crate) wake: Arc<Wake>,
}

impl PgLocks {
    /// Connects to the database at `url` (`postgres://user:password@host:port/db`, or the
    /// `key=value` form) with the default [`PgConfig`] (schema `"alkstore"`, 2 s
    /// `io_timeout`, a pool of 4), creating the schema if it is missing.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the server cannot be reached within the `io_timeout`,
    /// the url is malformed, or the schema cannot be installed (see
    /// [`connect_with`](Self::connect_with)).
    ///
    /// # Example
    /// ```no_run
    /// # async fn run() -> Result<(), alkstore_mem::LockError> {
    /// let locks = alkstore_pg::PgLocks::connect("postgres://app@127.0.0.1/app").await?;
    /// # drop(locks);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect(url: &str) -> Result<PgLocks, LockError> {
        Self::connect_with(url, PgConfig::default()).await
    }

    /// Connects to the database at `url` with `config`. The schema is created with its
    /// tables and functions when it is missing: by a versioned migration in one transaction
    /// under an advisory lock, so several processes may connect at once; a schema installed
    /// earlier is checked (its version, and that it was installed by a build with the same
    /// clock).
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the server cannot be reached within the `io_timeout`,
    /// the url is malformed, the schema name is not one this engine uses (see
    /// [`PgConfig::with_schema`]), the database is not UTF8, or the schema is at a newer
    /// version or installed by a build with the other clock.
    ///
    /// # Example
    /// ```no_run
    /// use alkstore_pg::{PgConfig, PgLocks};
    /// use std::time::Duration;
    ///
    /// # async fn run() -> Result<(), alkstore_mem::LockError> {
    /// let config = PgConfig::new()
    ///     .with_schema("jobs_locks")
    ///     .with_io_timeout(Duration::from_millis(500));
    /// let locks = PgLocks::connect_with("host=127.0.0.1 user=app dbname=app", config).await?;
    /// # drop(locks);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect_with(url: &str, config: PgConfig) -> Result<PgLocks, LockError> {
        config.check_schema().map_err(unavailable)?;
        let pg_config = tokio_postgres::Config::from_str(url).map_err(|e| {
            unavailable(format!(
                "invalid postgres url (not quoted, it may hold a password): {e}"
            ))
        })?;
        let schema = Schema::new(config.schema());
        let io = config.io_timeout();
        let pool = Pool::new(
            pg_config,
            config.pool_size(),
            io,
            config.lock_wait(),
            &schema,
        );
        let migrate = async {
            let mut client = pool.connect().await?;
            crate::sql::migrate(&mut client, &schema)
                .await
                .map_err(|why| {
                    unavailable(format!("installing schema {:?}: {why}", schema.name))
                })?;
            pool.warm(client).await;
            Ok::<(), LockError>(())
        };
        tokio::time::timeout(io, migrate).await.map_err(|_| {
            unavailable(format!(
                "could not connect to {} and check schema {:?} within {io:?}",
                crate::pool::redacted(pool.config()),
                schema.name
            ))
        })??;
        let wake = Arc::new(Wake::new(pool.config().clone(), schema.channel.clone(), io));
        let inner = Arc::new(Inner {
            pool,
            config,
            schema,
            wake,
        });
        crate::sweep::spawn_sweeper(Arc::downgrade(&inner));
        Ok(PgLocks { inner })
    }

    /// The configuration this store runs with.
    pub fn config(&self) -> &PgConfig {
        &self.inner.config
    }

    /// The SQL that calls this store's `fence(name, token)` function, for any client:
    /// `SELECT "<schema>".fence($1, $2)` with the lock's name (text) and fencing token
    /// (bigint). Run it inside the transaction that makes the guarded write, before the
    /// write; see [`PgLock::fence`] and the [crate docs](crate#fencing-in-your-own-transaction).
    ///
    /// # Example
    /// ```no_run
    /// # async fn run(locks: alkstore_pg::PgLocks) {
    /// assert_eq!(locks.fence_sql(), r#"SELECT "alkstore".fence($1, $2)"#);
    /// # }
    /// ```
    pub fn fence_sql(&self) -> String {
        format!("SELECT {}.fence($1, $2)", self.inner.schema.ident)
    }

    /// [`PgLock::fence`] for the lease `lease` describes: what a
    /// [`with_lock`](alkstore_mem::with_lock) body, which gets the lease's
    /// [`LeaseInfo`] rather than the handle, calls inside its transaction.
    ///
    /// The lease must be one this store granted: the check is on this store's schema, by
    /// name and token, and tokens are unique per schema only, so a lease of another schema
    /// (or engine) whose name and token happen to match a live lease here passes.
    ///
    /// # Errors
    /// As [`PgLock::fence`]: SQLSTATE `55F01` ([`is_fence_error`](crate::is_fence_error))
    /// unless the lease is live with its token now, or any other error of the call.
    ///
    /// # Example
    /// ```no_run
    /// # use std::time::Duration;
    /// # async fn run(locks: alkstore_pg::PgLocks, db: tokio_postgres::Client)
    /// # -> Result<(), Box<dyn std::error::Error>> {
    /// use alkstore_mem::{LockOptions, with_lock};
    /// use tokio::sync::Mutex;
    ///
    /// let db = &Mutex::new(db);
    /// let locks = &locks;
    /// let options = LockOptions::ttl(Duration::from_secs(30)).wait(Duration::from_secs(5));
    /// let wrote = with_lock(locks, "invoice/1001", "worker-1", options, |lease| async move {
    ///     let mut db = db.lock().await;
    ///     let tx = db.transaction().await?;
    ///     locks.fence(&tx, &lease).await?; // refused unless the lease is live
    ///     tx.execute("UPDATE invoices SET paid = true WHERE id = 1001", &[]).await?;
    ///     tx.commit().await
    /// })
    /// .await?; // None: the name stayed busy for 5 s
    /// if let Some(written) = wrote {
    ///     written?; // the transaction's own outcome
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn fence<C: tokio_postgres::GenericClient + Sync>(
        &self,
        client: &C,
        lease: &LeaseInfo,
    ) -> Result<(), tokio_postgres::Error> {
        let token = i64::try_from(lease.token()).unwrap_or(i64::MAX);
        client
            .execute(&self.fence_sql(), &[&lease.name(), &token])
            .await
            .map(|_| ())
    }

    /// Runs `op` with `params`; every failure is [`LockError::Unavailable`] except a row
    /// locked by another transaction ([`Fail::Locked`]).
    pub(crate) async fn call(
        &self,
        op: Op,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Fail> {
        let answer = self.inner.pool.call(op, params).await;
        if let Err(Fail::Down(err)) = &answer {
            alkstore_mem::events::unavailable(op.name(), err);
        }
        answer
    }

    /// Takes the lock `name` for `owner` until `ttl` from now (on the server's clock), if it
    /// is free.
    ///
    /// Resolves to `Ok(Some(lock))` when granted, with a fencing token larger than every
    /// token granted before on this name (and unique in the schema); `Ok(None)` when a live
    /// lease holds the name (the same owner's included), waiters are queued for it (the
    /// first of them is handed the lease instead), or a transaction that called `fence()` on
    /// it is still open (after the config's lock wait).
    ///
    /// # Errors
    /// [`LockError::InvalidName`], [`LockError::ReservedName`], [`LockError::InvalidOwner`],
    /// [`LockError::InvalidTtl`] before any round trip, exactly as the core's;
    /// [`LockError::Unavailable`] when the server does not answer within the `io_timeout`:
    /// then no lock is held by this call (a lease granted by a reply that was lost lapses at
    /// its deadline).
    ///
    /// # Example
    /// ```no_run
    /// # use std::time::Duration;
    /// # async fn run(locks: alkstore_pg::PgLocks) -> Result<(), alkstore_mem::LockError> {
    /// match locks.try_lock("report", "host-1", Duration::from_secs(30)).await? {
    ///     Some(lock) => { /* ... */ lock.release().await?; }
    ///     None => println!("someone else runs the report"),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_lock(&self, name: &str, owner: &str, ttl: Duration) -> PgFuture<'_, Option<PgLock>> {
        let (name, owner) = (name.to_owned(), owner.to_owned());
        BoxedFuture::new(async move { self.try_lock_inner(&name, &owner, ttl).await })
    }

    async fn try_lock_inner(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<PgLock>, LockError> {
        check_request(name, owner, ttl, &self.inner.config.limits())?;
        let rid = crate::acquire::new_id();
        let sent = Instant::now();
        let stored = owner_to_sql(owner);
        let rows = match self
            .call(Op::TryLock, &[&name, &stored, &micros(ttl), &rid])
            .await
        {
            Ok(rows) => rows,
            Err(Fail::Locked) => return Ok(None),
            Err(Fail::Down(err)) => return Err(err),
        };
        let reply = numbers(&rows)?;
        if field(&reply, 0)? != 1 {
            return Ok(None);
        }
        let (token, deadline, now) = (field(&reply, 1)?, field(&reply, 2)?, field(&reply, 3)?);
        let lock = PgLock::new(
            self.clone(),
            name,
            owner,
            u64::try_from(token).unwrap_or(0),
            from_us(deadline),
            ttl,
            Anchor::new(now, sent),
        );
        // After the handle exists: a subscriber that panics unwinds through its drop, which
        // releases the lease.
        alkstore_mem::events::granted(name, owner, lock.token(), lock.deadline(), false);
        Ok(Some(lock))
    }

    /// Waits for the lock `name`, then holds it for `ttl`: without limit, unless bounded with
    /// [`PgAcquire::timeout`].
    ///
    /// Waiters on a name are served in arrival order across every process sharing the
    /// schema: a release hands the lease to the first waiter inside the release's own
    /// transaction, and a `try_lock` arriving in between gets `None`. Waiters sleep until a
    /// `NOTIFY` (and wake once at the holder's deadline, in case its lease lapses instead);
    /// they do not poll. A transaction holding `fence()` on the name does not hold the queue
    /// up: a waiter arriving meanwhile is queued in its turn and keeps its heartbeat; only
    /// the grant waits for that transaction to end. Dropping the future leaves the queue and
    /// passes on a lease already handed to it, also when a step was in flight or the runtime
    /// is shutting down (see [`PgAcquire`]).
    ///
    /// # Errors
    /// Those of [`try_lock`](Self::try_lock), at the first poll.
    ///
    /// # Example
    /// ```no_run
    /// # use std::time::Duration;
    /// # async fn run(locks: alkstore_pg::PgLocks) -> Result<(), alkstore_mem::LockError> {
    /// let lock = locks
    ///     .acquire("invoice/1001", "worker-2", Duration::from_secs(10))
    ///     .timeout(Duration::from_secs(5))
    ///     .await?;
    /// if let Some(lock) = lock {
    ///     lock.release().await?;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn acquire(&self, name: &str, owner: &str, ttl: Duration) -> PgAcquire {
        let checked = check_request(name, owner, ttl, &self.inner.config.limits());
        PgAcquire::new(self.clone(), name, owner, ttl, checked)
    }

    /// The live lease on `name`: `Ok(None)` when the name is free, its lease lapsed, or
    /// `name` is not a valid lock name (then without a round trip). The deadline is on the
    /// server's clock.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the server does not answer within the `io_timeout`.
    ///
    /// # Example
    /// ```no_run
    /// # async fn run(locks: alkstore_pg::PgLocks) -> Result<(), alkstore_mem::LockError> {
    /// if let Some(lease) = locks.holder("invoice/1001").await? {
    ///     println!("{} holds it with token {}", lease.owner(), lease.token());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn holder(&self, name: &str) -> PgFuture<'_, Option<LeaseInfo>> {
        let name = name.to_owned();
        BoxedFuture::new(async move { self.holder_inner(&name).await })
    }

    async fn holder_inner(&self, name: &str) -> Result<Option<LeaseInfo>, LockError> {
        if check_name(name, &self.inner.config.limits()).is_err() {
            return Ok(None);
        }
        let rows = self.call(Op::Holder, &[&name]).await?;
        Ok(lease_row(name, &rows)?.0)
    }

    /// Ends the live lease on `name`, whoever holds it, and returns it: `Ok(None)` when the
    /// name had no live lease or is not a valid lock name (without a round trip). The name
    /// goes to the first waiter, with a larger token; the old holder's `renew` and
    /// `keep_alive` then end with [`LockError::Expired`], and its `release` answers `false`.
    /// An operator's tool: the old holder is not told, and may still write until its next
    /// renewal (its writes are refused by `fence()` at once).
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the server does not answer within the `io_timeout`,
    /// or, at once, when a transaction that called `fence()` on the name is still open (its
    /// guarded writes are not cut short; retry once it has ended).
    ///
    /// # Example
    /// ```no_run
    /// # async fn run(locks: alkstore_pg::PgLocks) -> Result<(), alkstore_mem::LockError> {
    /// if let Some(ended) = locks.force_release("invoice/1001").await? {
    ///     println!("ended {}'s lease (token {})", ended.owner(), ended.token());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn force_release(&self, name: &str) -> PgFuture<'_, Option<LeaseInfo>> {
        let name = name.to_owned();
        BoxedFuture::new(async move { self.force_release_inner(&name).await })
    }

    async fn force_release_inner(&self, name: &str) -> Result<Option<LeaseInfo>, LockError> {
        if check_name(name, &self.inner.config.limits()).is_err() {
            return Ok(None);
        }
        let rows = self.call(Op::ForceRelease, &[&name]).await?;
        let ended = lease_row(name, &rows)?.0;
        if let Some(lease) = &ended {
            alkstore_mem::events::force_released(lease);
        }
        Ok(ended)
    }

    /// What the schema holds now: every live lease (sorted by name) and every queued waiter
    /// (by name, then in the order they will be served), in one round trip that takes no
    /// lock. Waiters whose heartbeat or wait has lapsed (a crashed process) are left out, and
    /// so is a lease handed to a waiter that died before picking it up ([`holder`](Self::holder)
    /// agrees: nobody ever held it).
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the server does not answer within the `io_timeout`.
    ///
    /// # Example
    /// ```no_run
    /// # async fn run(locks: alkstore_pg::PgLocks) -> Result<(), alkstore_mem::LockError> {
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
    pub fn snapshot(&self) -> PgFuture<'_, Snapshot> {
        BoxedFuture::new(self.snapshot_inner())
    }

    async fn snapshot_inner(&self) -> Result<Snapshot, LockError> {
        let rows = self.call(Op::Snapshot, &[]).await?;
        let bad = || unavailable("unexpected reply from a lock function");
        let mut snapshot = Snapshot::default();
        for row in &rows {
            let kind: i32 = row.try_get(0).map_err(|_| bad())?;
            let name: String = row.try_get(1).map_err(|_| bad())?;
            let owner: String = row.try_get(2).map_err(|_| bad())?;
            let owner = owner_from_sql(&owner);
            if kind == 0 {
                let token: i64 = row.try_get(3).map_err(|_| bad())?;
                let deadline: i64 = row.try_get(4).map_err(|_| bad())?;
                snapshot.held.push(LeaseInfo::new(
                    &name,
                    &owner,
                    u64::try_from(token).unwrap_or(0),
                    from_us(deadline),
                ));
            } else {
                snapshot.waiting.push(Waiting::new(&name, &owner));
            }
        }
        Ok(snapshot)
    }

    /// Test builds only: moves this schema's lease clock forward by `by` and wakes every
    /// sleeper of every process sharing the schema, so that each re-checks at the new time.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the server does not answer within the `io_timeout`.
    #[cfg(feature = "test-clock")]
    pub async fn advance_test_clock(&self, by: Duration) -> Result<(), LockError> {
        self.call(Op::AdvanceClock, &[&micros(by)]).await?;
        Ok(())
    }
}

impl AsRef<Pool> for Inner {
    fn as_ref(&self) -> &Pool {
        &self.pool
    }
}

impl fmt::Debug for PgLocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgLocks")
            .field("schema", &self.inner.config.schema())
            .field("io_timeout", &self.inner.config.io_timeout())
            .field("pool_size", &self.inner.config.pool_size())
            .finish_non_exhaustive()
    }
}
