//! alkstore-mem's lock contract on PostgreSQL: named exclusive locks with TTL leases, fencing
//! tokens and FIFO waiting, shared by every process that reaches one database, with fencing
//! checked inside your own transactions.
//!
//! # The model
//! [`PgLocks`] is a small connection pool, one listening connection for wake-ups, and a
//! schema (default `alkstore`) that it creates when missing: tables, sequences and one
//! plpgsql function per operation (`src/sql/*.sql`), installed by a versioned migration
//! under an advisory lock (version 4; a schema of version 1, 2 or 3, made by an earlier
//! build, is upgraded in place). Each operation checks its input locally with the core's own
//! checks ([`alkstore_mem::validate`]), then calls one function, in one round trip, that reads the
//! server's `clock_timestamp()`, decides under the lease row's lock, takes the token after
//! that lock, and writes. Time is the server's, never the client's: [`PgLock::deadline`] is
//! on the server's timeline (nanoseconds since the Unix epoch). The same methods exist
//! inherently (no trait import needed) and through [`alkstore_mem::LockStore`].
//!
//! The engine's sessions run with `synchronous_commit = on` and READ COMMITTED (whatever the
//! server's, database's or role's defaults; see the README for every pinned setting):
//! a grant or a renewal is answered only once its commit is flushed, so a crash or restart
//! never hands out again a token a holder was told, nor shortens a lease its holder renewed.
//! (On a failover to an asynchronous replica the last commits can be lost whatever the
//! session asks: tokens are unique only on a timeline that keeps its commits.) A release that
//! hands the name to nobody is the one exception: it does not wait for its flush (one flush
//! per lock and release, not two); a crash may lose it, and the lease then lapses at its
//! deadline (the name stays busy until then, never granted twice), and any later grant's
//! commit flushes it anyway.
//!
//! # What it promises
//! - **Exclusion**: at most one live lease per name in a schema; busy is `Ok(None)`.
//! - **Renew** is an absolute reset to the server's now + ttl, refused at or after the
//!   deadline; **release** compares the fencing token and never frees a newer lease.
//! - **Fencing tokens** come from one sequence per schema, taken only while the name's row is
//!   locked: they strictly increase per name in grant order and are unique in the schema,
//!   also after a crash or restart.
//! - **Waiting** is FIFO across processes with hand-off inside the release's transaction,
//!   wake-ups by `LISTEN/NOTIFY`, a bounded re-check at the holder's deadline, and crashed
//!   waiters skipped once their heartbeat lapses (see [`PgAcquire`]). A dropped `acquire`
//!   leaves nothing behind, also when its step was still in flight or its runtime was
//!   shutting down.
//! - **Time never goes back** (the in-memory registry's rule): lease time in a schema is the
//!   server's clock raised to a floor that the schema keeps (a sequence), so when the
//!   server's clock steps back (an NTP step), a lease seen lapsed, by any operation
//!   (`is_held`, `renew`, `fence`, `holder`, `snapshot`, a takeover), stays lapsed, and
//!   time on one name never goes back. Across names the floor follows the clock in steps of
//!   at most 10 ms (written at most about a hundred times a second, so that it costs no
//!   contention): after a step back, time another name saw may repeat by up to that.
//! - **Failures** (connection refused, no answer within [`PgConfig::io_timeout`], a
//!   terminated backend, a restart) are [`LockError::Unavailable`](alkstore_mem::LockError::Unavailable),
//!   never a panic and never a lock believed held that is not. The same store works again
//!   once the server is back.
//! - **Schemas** on one database never meet. Names (of any length the configuration allows:
//!   one longer than 2000 bytes, beyond what a btree key holds, is keyed by its SHA-256) and
//!   owners are bound parameters, never spliced into SQL; only the schema is an identifier,
//!   checked and quoted.
//! - **Memory follows the live state**: every store sweeps the schema every 30 s (on the
//!   runtime it was connected on, while that runs); a name
//!   unused for a minute (free, or lapsed with crashed waiters, or handed to a waiter that
//!   died before picking it up) loses its rows.
//!
//! # Fencing in your own transaction
//! When the lock and the data it guards live in one database, the fencing check runs inside
//! the transaction that writes: call `<schema>.fence(name, token)` first (from any client:
//! [`PgLocks::fence_sql`] gives the SQL, [`PgLock::fence`] runs it on a `tokio-postgres`
//! transaction). It raises SQLSTATE [`FENCE_SQLSTATE`] (`55F01`) with a message naming the
//! lock unless that token's lease is live on the server's clock, and it keeps the lease row
//! locked (`FOR KEY SHARE`) until the transaction ends: nobody can be granted the name until
//! the guarded write has committed or rolled back. The trade-off: a long transaction delays
//! a takeover past the lease's deadline (a `try_lock` meanwhile answers `None` after the
//! config's [lock wait](PgConfig::with_lock_wait)).
//!
//! While the fenced transaction is open, everything but a grant goes on (each takes the row
//! `FOR NO KEY UPDATE`, which the fence does not block): the holder renews, and may release
//! (`Ok(true)`: the lease ends, its token is refused from then on, but the name stays held
//! off until the transaction ends); waiters queue in arrival order and keep their heartbeats.
//! A hand-off held up by the fence (the lease was released or lapsed meanwhile;
//! `force_release` refuses while the fence is open) is made by whoever settles the name
//! first after the transaction ends: a release, a `try_lock`, `holder`, or the
//! first waiter's own next step, at the latest one [waiter
//! heartbeat](PgConfig::with_waiter_heartbeat) later (the end of a user's transaction sends
//! no notification).
//!
//! Two limits of PostgreSQL's row locks, which `fence()` cannot lift:
//! - **Savepoints**: a fence called inside a savepoint (a nested transaction of an ORM, a
//!   plpgsql block with an `EXCEPTION` clause) that is then rolled back is released with it:
//!   PostgreSQL drops row (and advisory) locks taken in an aborted subtransaction, and
//!   nothing a function can take survives that rollback yet ends with the transaction. Call
//!   `fence()` in the transaction itself, or again after `ROLLBACK TO SAVEPOINT`.
//! - **Read-only transactions**: a row lock needs a read-write transaction, so `fence()` in a
//!   `READ ONLY` transaction fails with SQLSTATE `25006`
//!   (`read_only_sql_transaction`), not `55F01`, whatever the lease: an error, never a pass.
//!
//! ```sql
//! BEGIN;
//! SELECT alkstore.fence('invoice/1001', 42);  -- raises 55F01 unless token 42 holds it now
//! UPDATE invoices SET status = 'paid' WHERE id = 1001;
//! COMMIT;
//! ```
//!
//! # Roles
//! An administrator may install the schema once ([`install`], as the role that is to own
//! it); roles without DDL rights then connect with the grants the README lists under "Roles
//! and grants" (a role that only calls `fence()` needs only `USAGE` on the schema: `fence()`
//! runs with its owner's rights). A hot standby is refused at connect.
//!
//! # TLS
//! Connections are made without TLS (`NoTls`): use it on a local socket or a trusted network,
//! or through a TLS tunnel; a TLS feature may follow.
//!
//! # Example
//! ```no_run
//! use alkstore_pg::PgLocks;
//! use std::time::Duration;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let url = "postgres://app@127.0.0.1:5432/app";
//! let locks = PgLocks::connect(url).await?;
//! let (mut client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
//! tokio::spawn(connection);
//! if let Some(lock) = locks.try_lock("invoice/1001", "worker-1", Duration::from_secs(10)).await? {
//!     let tx = client.transaction().await?;
//!     lock.fence(&tx).await?; // the database refuses a stale holder here
//!     tx.execute("UPDATE invoices SET status = 'paid' WHERE id = 1001", &[]).await?;
//!     tx.commit().await?;
//!     lock.release().await?;
//! }
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations)]

mod admin;
mod config;
mod conn;
mod fenced;
mod listener;
mod lock;
mod op;
mod pool;
mod pooler;
mod snapshot;
mod sql;
mod store;
mod sweep;
mod wire;

pub use admin::install;
pub use config::PgConfig;
pub use listener::{PgFallback, PgListener};
pub use lock::{PgFence, PgLock};
pub use store::Pg;

/// Named exclusive locks with TTL leases and fencing tokens, kept in PostgreSQL: the kit's
/// store on the [`Pg`] engine.
///
/// Cheap to clone: clones share one connection pool and one listening connection. Every
/// operation validates its input locally with the core's checks, then calls one plpgsql
/// function of the store's schema that reads the server's `clock_timestamp()`, decides under
/// the lease row's lock and writes, in one round trip (a caller that stops waiting never cuts
/// a call on a pooled connection: the call runs on to its end in a task of its own). See the
/// [crate docs](crate) for the model and the guarantees.
///
/// [`connect`](alkstore_kit::Locks::connect) takes `postgres://user:password@host:port/db`
/// or the `key=value` form, with the default [`PgConfig`] (schema `"alkstore"`, 2 s
/// `io_timeout`, a pool of 4), and creates the schema when it is missing;
/// [`connect_with`](alkstore_kit::Locks::connect_with) takes a config. On PostgreSQL:
/// - `try_lock` answers `Ok(None)` also while a transaction that called `fence()` on the
///   name is still open (after the config's [lock wait](PgConfig::with_lock_wait));
/// - a waiting `acquire` is not held up by such a transaction: it queues in its turn and
///   keeps its heartbeat; only the grant waits for the transaction to end;
/// - `force_release` refuses at once (`Unavailable`) while such a transaction is open (its
///   guarded writes are not cut short; retry once it has ended);
/// - `snapshot` reads the schema in pages of 10,000 rows (keyset by name, each page one
///   statement within the `io_timeout`, so a schema of any size answers; a name that changes
///   meanwhile is shown as its page found it), and takes no lock; waiters whose heartbeat or wait has
///   lapsed are left out, and so is a lease handed to a waiter that died before picking it up;
/// - [`fence`](alkstore_kit::Locks::fence)`(&tx, &lease)` checks a lease inside your
///   transaction (for a `with_lock` body, which gets a [`LeaseInfo`](alkstore_mem::LeaseInfo)),
///   by name and token on this store's schema; [`fence_sql`](alkstore_kit::Locks::fence_sql)
///   gives the statement, `SELECT "<schema>".fence($1, $2)`.
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
pub type PgLocks = alkstore_kit::Locks<Pg>;

/// Waits for a lock: the future of [`PgLocks::acquire`](alkstore_kit::Locks::acquire), FIFO
/// across processes (see [`alkstore_kit::Acquire`] for the waiting protocol). On PostgreSQL a
/// step is one call of the schema's `acquire()` function, and a waiter is woken by `NOTIFY`
/// at the commit of the transaction that handed it the lease.
pub type PgAcquire = alkstore_kit::Acquire<Pg>;

/// The future of a one-shot call to PostgreSQL ([`PgLocks::try_lock`](alkstore_kit::Locks::try_lock),
/// [`PgLock::renew`](alkstore_kit::Lock::renew), …): a named type, so that it can be stored
/// and `select!`ed.
pub type PgFuture<'a, T> = alkstore_kit::RemoteFuture<'a, T>;

/// The future of [`PgLock::keep_alive`](alkstore_kit::Lock::keep_alive): resolves only when
/// the lease is lost, with why.
pub type PgKeepAlive<'a> = alkstore_kit::KeepAliveFuture<'a>;

/// The future of [`PgLock::lapsed`](alkstore_kit::Lock::lapsed): resolves once the lease is
/// no longer held, with why.
pub type PgLapsed<'a> = alkstore_kit::LapsedFuture<'a>;

/// The core this engine implements, re-exported: `alkstore_pg::alkstore_mem::LockStore` is
/// always the very trait `PgLocks` implements, whatever version of `alkstore-mem` the rest of
/// your dependency tree names.
pub use alkstore_mem;

/// The SQLSTATE of `fence()`'s refusal: class 55, "object not in prerequisite state".
pub const FENCE_SQLSTATE: &str = "55F01";

/// Whether `error` is `fence()` refusing a lease that is not live with the given token.
///
/// # Example
/// ```no_run
/// # async fn run(lock: alkstore_pg::PgLock, tx: tokio_postgres::Transaction<'_>) {
/// match lock.fence(&tx).await {
///     Ok(()) => { /* write, then commit */ }
///     // The refusal's message names the lock: it is in the database error, not in `{e}`.
///     Err(e) if alkstore_pg::is_fence_error(&e) => {
///         let why = e.as_db_error().map(|db| db.message().to_owned()).unwrap_or_default();
///         eprintln!("stale holder: {why}");
///     }
///     Err(e) => eprintln!("database error: {e}"),
/// }
/// # }
/// ```
pub fn is_fence_error(error: &tokio_postgres::Error) -> bool {
    error
        .code()
        .is_some_and(|code| code.code() == FENCE_SQLSTATE)
}
