//! alkstore-mem's lock contract on Redis: named exclusive locks with TTL leases, fencing
//! tokens and FIFO waiting, shared by every process that reaches one Redis.
//!
//! # The model
//! [`RedisLocks`] is a connection (one multiplexed [`redis::aio::ConnectionManager`] that
//! reconnects by itself, plus a pub/sub subscriber for waiters) and a namespace: the engine
//! kit's store ([`alkstore_kit::Locks`]) over the [`Redis`] engine, which implements the
//! kit's [`Protocol`](alkstore_kit::Protocol) with one Lua script per operation (waiting,
//! keep-alive, release on drop and cancel safety are the kit's, shared by every engine). Each
//! operation checks its input locally with the core's own checks
//! ([`alkstore_mem::validate`]), then runs one Lua script that reads the server's `TIME`,
//! decides, and writes atomically. Time is the server's, never the client's: a client whose
//! clock is off cannot break exclusion, and [`RedisLock::deadline`] is on the server's
//! timeline (nanoseconds since the Unix epoch by the server's `TIME`). The same methods exist
//! inherently (no trait import needed) and through [`alkstore_mem::LockStore`], so code
//! written and tested against the in-memory engine runs on Redis unchanged.
//!
//! # What it promises
//! - **Exclusion**: at most one live lease per name in a namespace; busy is `Ok(None)`.
//! - **Renew** is an absolute reset to the server's now + ttl, refused at or after the
//!   deadline ([`LockError::Expired`](alkstore_mem::LockError::Expired)); **release**
//!   compares the fencing token, never frees a newer lease, and answers `false` for a lapsed
//!   lease.
//! - **Fencing tokens** strictly increase across the namespace. The counter `{ns}:token` is
//!   raised to at least the server's time in microseconds at every grant, so tokens keep
//!   increasing across a Redis restart that lost the counter (no persistence), as long as
//!   the server's clock did not step back by more than the time the restart took, and for
//!   the same reason across a failover to a replica whose clock reads later than the old
//!   master's did at its last grant. A failover to a replica that missed the last writes
//!   **can grant a name that was held** (within one replication lag plus the clients' move
//!   to the new master): fencing then refuses the stale holder's writes made after the new
//!   holder's, by the token order above (a stale write made first is accepted). To close that window, set
//!   [`RedisConfig::with_replica_ack`]: a grant or renewal is acknowledged by that many
//!   replicas (`WAIT`) before the caller is told it holds the lock, else `Unavailable` and
//!   the grant is withdrawn.
//! - **TLS**: `rediss://` URLs (feature `tls`, on by default, rustls), with the system's
//!   roots or [`RedisConfig::with_tls_root_ca`].
//! - **Sentinel**: `redis+sentinel://host:port[,host:port…]/master_name[/db]` connects to
//!   the master the sentinels name, and asks them again whenever a connection to it fails
//!   or the server answers as a replica (`READONLY`): within one `io_timeout` a call retries
//!   through a failover, then reaches the new master; the pub/sub listener resubscribes
//!   there, so waiters queued before the failover are woken by the new master's hand-offs.
//!   The sentinels are asked again at most once a second in any case, so that a store leaves
//!   a demoted master that still answers within about a second.
//! - **Waiting** is FIFO across processes with direct hand-off inside the release script and
//!   no barging; waiters sleep on pub/sub with a bounded re-check (see [`RedisAcquire`]).
//! - **Failures** (connection refused, no answer within [`RedisConfig::io_timeout`], a script
//!   error) are [`LockError::Unavailable`](alkstore_mem::LockError::Unavailable), never a
//!   panic and never a lock believed held that is not. When Redis comes back, the same store
//!   works again.
//! - **Redis Cluster**: `redis+cluster://host:port[,host:port…]` or
//!   [`Redis::connect_cluster`]: every key of a namespace starts with `{ns}:`, one hash slot,
//!   and scripts follow it (`MOVED`, `ASK`); while the slot migrates no script runs (each
//!   declares a second key that never exists, so the cluster answers `TRYAGAIN`), never on a
//!   half-moved namespace. Wake-ups by plain pub/sub, which reaches every node.
//!
//! # Example
//! ```no_run
//! use alkstore_redis::RedisLocks;
//! use std::time::Duration;
//!
//! # async fn run() -> Result<(), alkstore_mem::LockError> {
//! let locks = RedisLocks::connect("redis://127.0.0.1:6379/").await?;
//! if let Some(lock) = locks.try_lock("invoice/1001", "worker-1", Duration::from_secs(10)).await? {
//!     // ... write to the store with lock.token() as the fencing token ...
//!     lock.release().await?;
//! }
//! // Wait up to 5 s for it, in line behind earlier waiters of every process.
//! let waited = locks.acquire("invoice/1001", "worker-1", Duration::from_secs(10))
//!     .timeout(Duration::from_secs(5))
//!     .await?;
//! # drop(waited);
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations)]

mod client;
mod cluster;
mod config;
mod conn;
mod connect;
mod listener;
mod lock;
mod scripts;
mod sentinel;
mod sentinel_conn;
mod snapshot;
mod source;
mod store;

/// The core this engine implements, re-exported: `alkstore_redis::alkstore_mem::LockStore` is
/// always the very trait `RedisLocks` implements, whatever version of `alkstore-mem` the rest
/// of your dependency tree names.
pub use alkstore_mem;

pub use config::RedisConfig;
pub use listener::{RedisFallback, RedisListener};
pub use lock::{RedisKeepAlive, RedisLapsed, RedisLock};
pub use store::Redis;

/// Named exclusive locks with TTL leases and fencing tokens, kept in Redis: the kit's
/// [`Locks`](alkstore_kit::Locks) over the [`Redis`] engine.
///
/// Cheap to clone: clones share one multiplexed connection (which reconnects by itself) and
/// one pub/sub subscriber. Every operation validates its input locally with the core's
/// checks, then runs one Lua script that reads the server's `TIME`, decides and writes
/// atomically; a call whose caller stops waiting runs on to its end in a task of its own
/// (so it is never cut in half). [`snapshot`](alkstore_kit::Locks::snapshot) lists the namespace's keys with `SCAN`
/// (in steps, never blocking the server for long) and reads them in batches. See the
/// [crate docs](crate) for the model and the guarantees.
///
/// A store is bound to the tokio runtime it was connected on (its connection's tasks run
/// there).
pub type RedisLocks = alkstore_kit::Locks<Redis>;

/// Waits for a lock: the future of [`RedisLocks::acquire`](alkstore_kit::Locks::acquire),
/// FIFO across processes. Each step runs `acquire.lua`; a dropped waiter runs `cancel.lua`
/// (see [`alkstore_kit::Acquire`] for the waiting protocol).
pub type RedisAcquire = alkstore_kit::Acquire<Redis>;

/// The future of a one-shot call to Redis ([`RedisLocks::try_lock`](alkstore_kit::Locks::try_lock),
/// [`RedisLock::renew`](alkstore_kit::Lock::renew), …): a named type, so that it can be
/// stored and `select!`ed.
pub type RedisFuture<'a, T> = alkstore_kit::RemoteFuture<'a, T>;
