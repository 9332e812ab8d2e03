//! alkstore-mem's lock contract on SQLite: named exclusive locks with TTL leases, fencing
//! tokens and FIFO waiting, shared by every process of one host through one database file,
//! with no server, and fencing checked inside your own transactions on that file.
//!
//! # The model
//! [`SqliteLocks`] (the kit's [`Locks`] over the [`Sqlite`] engine) owns one connection to
//! the file, on a thread of its own: blocking SQLite calls never run on an async worker.
//! Every operation checks its input locally with the core's checks, then runs one
//! `BEGIN IMMEDIATE` transaction on that thread which reads the lease clock, decides and
//! writes. SQLite's single writer serializes it with every other process's operations. The
//! tables live in the file under a namespace prefix (`alkstore_leases`, ...; see
//! [`SqliteConfig::with_namespace`]); the file may hold your own tables too, which the engine
//! never reads or writes.
//!
//! # What it promises
//! - **Exclusion**: at most one live lease per name in a namespace; busy is `Ok(None)`.
//! - **Time never goes back**: lease time is the host's wall clock raised to a floor kept in
//!   the file, which every operation carries forward; when the clock steps back (NTP, a
//!   user), leases keep their deadlines on the floor's time and a lease seen lapsed stays
//!   lapsed (by a store's operation, or by `lock.fence(&tx)`, whose refused transaction rolls
//!   back: the store's own connection records that lapse right after; see [`Sqlite`]'s
//!   `Fencing` impl).
//! - **Fencing tokens** strictly increase per name and are unique in the namespace: each is
//!   `max(last + 1, lease time in µs)`, kept in the file, so they keep growing after a
//!   `kill -9` (a committed transaction is in the WAL), after the file is closed and
//!   reopened, and, with [`Synchronous::Normal`], after a power loss that lost the last
//!   commits (as long as the clock is past them).
//! - **Waiting** is FIFO across processes with hand-off inside the releasing transaction, a
//!   re-check at the holder's deadline, and crashed waiters skipped once their heartbeat (3 ×
//!   [`SqliteConfig::with_waiter_heartbeat`]) lapses. A dropped `acquire` leaves the queue.
//!   Wake-ups cross processes through the file ([`Doorbell`]): about a millisecond.
//! - **Failures**: another connection that holds the write lock for longer than the
//!   [`io_timeout`](SqliteConfig::with_io_timeout) (default 2 s) gives
//!   `LockError::Unavailable` with the reason, never a hang or a panic; so does any I/O error.
//! - **Refused at open**, with the reason: an in-memory database, a file on a network file
//!   system (NFS, SMB/CIFS, 9p, sshfs, Ceph, ... as `/proc/self/mounts` tells; others cannot
//!   be detected, and WAL's shared memory does not work across hosts: keep the file local),
//!   a file that is not SQLite, tables of the namespace that were not made by this engine or
//!   by a newer version, a read-only file or directory, a `-shm` deleted while another process
//!   has the file open (see [`open`] for the whole list).
//! - **Side files**: a store whose file, `-wal` or `-shm` was deleted or replaced after it
//!   opened refuses every operation, saying which: SQLite's locks between connections live in
//!   the `-shm`, and a process opening the file next would make a new one and not see this
//!   store's locks. Its leases lapse at their deadlines.
//!
//! # Fencing in your own transaction
//! When the lock and the data it guards live in one file, the check runs inside the
//! transaction that writes: `lock.fence(&tx)` on a `rusqlite::Transaction` begun with
//! `BEGIN IMMEDIATE` errs with a [`FenceError`] unless the lease is live now, and, SQLite
//! having one writer, nobody can take the lease over before that transaction ends. For
//! triggers and plain SQL, [`install_fence`] registers `alkstore_fence(name, token)`. See
//! [`Sqlite`'s `Fencing` impl](Sqlite#impl-Fencing<Transaction<'c>>-for-Sqlite) for why it is
//! exact and what a long transaction costs.
//!
//! # Example
//! ```
//! use std::time::Duration;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! # let dir = std::env::temp_dir().join(format!("alkstore-sqlite-doc-lib-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).unwrap();
//! let locks = alkstore_sqlite::open(dir.join("locks.db")).await?;
//! let lock = locks.try_lock("nightly-report", "host-a/pid-42", Duration::from_secs(30)).await?;
//! let lock = lock.expect("nobody else holds it");
//! // Another process asking now gets `None`; one calling `acquire` waits in line.
//! assert!(locks.try_lock("nightly-report", "someone-else", Duration::from_secs(30)).await?.is_none());
//! assert!(lock.release().await?);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok::<(), alkstore_sqlite::LockError>(()) }).unwrap();
//! ```
#![deny(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations)]

mod busy;
mod config;
mod db;
mod engine;
mod fence;
mod lease;
mod listen;
mod location;
mod ops;
#[cfg(test)]
mod ops_tests;
mod queue;
mod schema;
mod shm;
mod sides;
mod stmts;
mod tasks;
mod tx;

use std::path::Path;

use alkstore_kit::{Acquire, Lock, Locks};

/// The core crate, for the rest of the contract (`LockStore`, `LockHandle`, `Snapshot`, ...).
pub use alkstore_mem;
/// What the examples and `locks.fence(&tx, &lease)` need from the core, so that depending on
/// this crate alone is enough: the error of every call, a lease's description (what a
/// [`with_lock`] body gets), and running a body under a lock.
pub use alkstore_mem::{LeaseInfo, LockError, LockOptions, with_lock};
pub use config::{SqliteConfig, Synchronous};
pub use engine::{Cleanup, Sqlite};
pub use fence::{FenceError, install_fence, install_fence_in};
pub use listen::Doorbell;

/// The store: named locks in one SQLite file (the kit's [`Locks`] over [`Sqlite`]).
/// Open it with [`open`] or [`open_with`] (or `SqliteLocks::connect("sqlite:path")`).
pub type SqliteLocks = Locks<Sqlite>;
/// A held lease (the kit's [`Lock`]): dropping it releases the lease.
pub type SqliteLock = Lock<Sqlite>;
/// The future of [`SqliteLocks::acquire`](Locks::acquire) (the kit's [`Acquire`]).
pub type SqliteAcquire = Acquire<Sqlite>;

/// Opens (creating if missing) the database file at `path` with the default config:
/// turns WAL on and creates the `alkstore` namespace's tables when missing.
///
/// # Errors
/// `LockError::Unavailable` with the reason, for:
/// - `""` or `":memory:"` (an in-memory database is private to one connection);
/// - a file on a network file system (as `/proc/self/mounts` tells: see the crate docs);
/// - a missing directory, a read-only file or directory;
/// - a file that is not SQLite, or one truncated to 0 bytes while in use;
/// - tables of the namespace not made by this engine, or by a newer or older schema version;
/// - a `-shm` missing while another process has the file open (deleted under it: opening
///   would make a second WAL index), or a `-wal`/`-shm` deleted under another store of
///   this process;
/// - the file's write lock held by another connection for the whole `io_timeout` (a long
///   write transaction elsewhere, on a file that may well be set up already): **a transient
///   refusal, retry it** (a cron job starting during another's long write would otherwise
///   exit), e.g. a few times with a pause, or with a longer
///   [`with_io_timeout`](SqliteConfig::with_io_timeout).
///
/// # Example
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// # let dir = std::env::temp_dir().join(format!("alkstore-sqlite-doc-open-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// let locks = alkstore_sqlite::open(dir.join("locks.db")).await?;
/// assert!(locks.holder("job").await?.is_none());
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), alkstore_mem::LockError>(()) }).unwrap();
/// ```
pub async fn open(path: impl AsRef<Path>) -> Result<SqliteLocks, LockError> {
    open_with(path, SqliteConfig::new()).await
}

/// Opens the database file at `path` with `config` (see [`open`]).
///
/// # Errors
/// As [`open`], and a namespace that is not an identifier.
///
/// # Example
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// # let dir = std::env::temp_dir().join(format!("alkstore-sqlite-doc-openw-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// use alkstore_sqlite::SqliteConfig;
/// use std::time::Duration;
///
/// let config = SqliteConfig::new().with_namespace("jobs").with_io_timeout(Duration::from_secs(1));
/// let locks = alkstore_sqlite::open_with(dir.join("app.db"), config).await?;
/// assert_eq!(locks.config().namespace(), "jobs");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), alkstore_mem::LockError>(()) }).unwrap();
/// ```
pub async fn open_with(
    path: impl AsRef<Path>,
    config: SqliteConfig,
) -> Result<SqliteLocks, LockError> {
    Ok(Locks::from_engine(Sqlite::open(path, config).await?))
}
