//! The engine kit: what every alkstore engine that talks to something outside its own memory
//! (a server, a database, a file shared by processes) does alike, written once.
//!
//! An engine writes its [`Protocol`]: the operations on its server or file (try_lock, one
//! step of a wait, withdraw, renew, release, is_held, holder, force_release, snapshot), a
//! wake-up source ([`Listener`]) and a way to run a clean-up with no runtime
//! ([`Fallback`]). The kit turns that into the whole contract of
//! [`alkstore_mem`]: the store [`Locks`], the handle [`Lock`], the waiting future
//! [`Acquire`], with
//! - validation by the core's rules before any I/O;
//! - FIFO waiting with bounded waits, heartbeats and wake-ups ([`Acquire`]);
//! - `keep_alive` and `lapsed` ([`Lock::keep_alive`], [`Lock::lapsed`]), never past the
//!   deadline by a local estimate of the engine's clock that errs early;
//! - release on drop, also while the runtime shuts down or with no runtime at all;
//! - cancel safety: every operation runs in a task of its own (its first poll in the
//!   caller's, so that requests leave in the order they are made), so a caller that stops
//!   waiting never cuts a call in half nor throws a healthy connection away, and whatever
//!   the call brought back (a grant, a place in a queue) is undone there;
//! - a call refused for time is treated as one dropped: the kit answers `Unavailable` at the
//!   `io_timeout`, but lets the request run on in its task, so whatever the engine does with
//!   it later (a frozen server thawing, a write lock freed) is undone by its request id; the
//!   undo, as every clean-up, is retried in the background (up to ten attempts over about
//!   ten seconds plus the attempts' `io_timeout`s) with tracing events. A caller told a call
//!   failed never ends up holding, or queued for, a lease no handle has. A refused renewal
//!   may still be applied: the handle then keeps its earlier, shorter, deadline (see
//!   [`Lock::renew`]);
//! - the shared config limits ([`CommonConfig`], [`common_config!`]), request ids
//!   ([`new_id`]), and the core's tracing events;
//! - the contract traits [`LockStore`](alkstore_mem::LockStore) and
//!   [`LockHandle`](alkstore_mem::LockHandle), so the conformance suite runs on every engine.
//!
//! Engines name the kit's types for their users: `pub type RedisLocks = Locks<Redis>;`, as
//! `sqlx` names `PgPool`. What only one engine has goes through a hook trait
//! ([`Fencing`] for a fence in the user's own transaction) or [`Locks::engine`].
//!
//! # Why a crate of its own
//! The core (`alkstore-mem`) is `no_std` and runtime-free: it runs in a browser and on
//! targets with no threads. What is written here needs tokio (tasks, timers, a helper thread
//! for clean-up at shutdown), so it lives beside the core, not in it; the browser engine
//! (single-threaded wasm, no tokio) shares the core's `PendingAcquire` and validation only.
//!
//! # Example: an engine in one page
//! A toy engine that keeps one lease in memory, to show the shape (see the Redis, PostgreSQL
//! and SQLite engines for real ones):
//! ```
//! # use alkstore_kit::*;
//! # use alkstore_mem::{LeaseInfo, LockError, Snapshot, Timestamp};
//! # use std::sync::Mutex;
//! # use std::time::Duration;
//! #[derive(Clone, Debug, Default)]
//! pub struct ToyConfig { common: CommonConfig }
//! alkstore_kit::common_config!(ToyConfig);
//!
//! pub struct Toy { config: ToyConfig, held: Mutex<Option<(String, u64)>> }
//! pub struct Quiet;
//! impl Listener for Quiet {
//!     async fn listen<'a>(&'a mut self, _: &'a dyn WakeSink) { std::future::pending().await }
//! }
//! impl Fallback for Quiet {
//!     async fn run(self, _: Job) -> bool { true }
//! }
//! impl Protocol for Toy {
//!     type Config = ToyConfig;
//!     type Listener = Quiet;
//!     type Fallback = Quiet;
//!     const NAME: &'static str = "toy";
//!     async fn connect(_: &str, config: ToyConfig) -> Result<Self, LockError> {
//!         Ok(Toy { config, held: Mutex::new(None) })
//!     }
//!     fn config(&self) -> &ToyConfig { &self.config }
//!     async fn try_lock(&self, name: &str, _: &str, _: Duration, _: &str)
//!         -> Result<Reply<Option<Grant>>, LockError> {
//!         let mut held = self.held.lock().unwrap();
//!         let now = Timestamp::from_nanos(1);
//!         if held.is_some() { return Ok(Reply { value: None, now }); }
//!         *held = Some((name.into(), 1));
//!         Ok(Reply { value: Some(Grant { token: 1, deadline: Timestamp::from_nanos(u64::MAX) }), now })
//!     }
//!     async fn step(&self, _: Step<'_>) -> Result<StepReply, LockError> { Ok(StepReply::Over) }
//!     async fn withdraw(&self, _: &str, _: &str, _: bool) -> Result<(), LockError> { Ok(()) }
//!     async fn renew(&self, _: &str, _: u64, _: Duration) -> Result<Reply<Option<Timestamp>>, LockError> {
//!         Ok(Reply { value: None, now: Timestamp::from_nanos(1) })
//!     }
//!     async fn release(&self, _: &str, _: u64, _: &str) -> Result<bool, LockError> {
//!         Ok(self.held.lock().unwrap().take().is_some())
//!     }
//!     async fn is_held(&self, _: &str, _: u64) -> Result<Reply<Held>, LockError> {
//!         let live = self.held.lock().unwrap().is_some();
//!         Ok(Reply { value: Held { live, deadline: Timestamp::from_nanos(u64::MAX) }, now: Timestamp::from_nanos(1) })
//!     }
//!     async fn holder(&self, _: &str) -> Result<Option<LeaseInfo>, LockError> { Ok(None) }
//!     async fn force_release(&self, _: &str) -> Result<Option<LeaseInfo>, LockError> { Ok(None) }
//!     async fn snapshot(&self) -> Result<Snapshot, LockError> { Ok(Snapshot::default()) }
//!     async fn advance_test_clock(&self, _: Duration) -> Result<(), LockError> { Ok(()) }
//!     fn listener(&self) -> Quiet { Quiet }
//!     fn fallback(&self) -> Quiet { Quiet }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let locks: Locks<Toy> = Locks::connect("toy://").await?;
//! let lock = locks.try_lock("job", "me", Duration::from_secs(5)).await?.expect("free");
//! assert!(locks.try_lock("job", "you", Duration::from_secs(5)).await?.is_none());
//! assert!(lock.release().await?);
//! # Ok::<(), LockError>(()) }).unwrap();
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations)]

mod acquire;
mod anchor;
mod call;
mod calls;
mod cleanup;
mod config;
mod contract;
mod errors;
mod fence;
mod id;
mod lock;
mod protocol;
mod store;
mod wake;
mod watch;

/// The core the kit builds on, re-exported for the macros and for engines.
pub use alkstore_mem;

pub use acquire::Acquire;
pub use config::CommonConfig;
pub use errors::unavailable;
pub use fence::{FenceSql, Fencing};
pub use id::new_id;
pub use lock::Lock;
pub use protocol::{
    Fallback, Grant, Held, Job, Listener, Protocol, Reply, Settings, Step, StepReply, WaitDeadline,
    WakeSink,
};
pub use store::{Locks, RemoteFuture};
pub use watch::{KeepAliveFuture, LapsedFuture};
