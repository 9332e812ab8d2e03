//! alkstore-mem's lock contract across every tab and worker of a browser origin: named
//! exclusive locks with TTL leases, fencing tokens and FIFO waiting, kept in IndexedDB.
//!
//! # The model
//! [`IdbLocks::open`] opens (creating on first use) one IndexedDB database; every window,
//! tab and dedicated worker of the origin that opens the same name shares its locks. Each
//! operation checks its input locally with the core's own checks
//! ([`alkstore_mem::validate`]), then runs **one `readwrite` transaction** that reads the
//! name's row and the database's clock row, decides synchronously, and writes what changed.
//! IndexedDB runs overlapping `readwrite` transactions one at a time across all contexts of an
//! origin, so read-decide-write is atomic. The same methods exist inherently and through
//! [`alkstore_mem::LockStore`] / [`alkstore_mem::LockHandle`], so code written and tested
//! against the in-memory engine runs here unchanged. `navigator.locks` has no ttl and no
//! fencing (a frozen or busy tab holds a Web Lock forever); this engine's leases lapse at
//! their deadline and carry a fencing token that a stale holder cannot forge.
//!
//! # What it promises
//! - **Exclusion**: at most one live lease per name in a database; busy is `Ok(None)`.
//! - **Fencing tokens** strictly increase across the database: `max(last + 1, now in µs)`,
//!   kept in the clock row, so they survive reloads and keep increasing even after the
//!   database was deleted (site data cleared, storage evicted), as long as the clock did not
//!   step back by more than the time since. Compare them; do not count on their values
//!   (about 1.8e15 today). Guard writes with the core's [`alkstore_mem::Fence`]. A token is
//!   never granted twice: a counter at 2^53 - 1 (only a forged or far-future row gets there)
//!   refuses to grant with `Unavailable`.
//! - **Waiting** is FIFO across contexts with direct hand-off: each name's row keeps a queue
//!   of tickets; a release writes the lease straight to the first live ticket and wakes its
//!   context over a `BroadcastChannel`; `try_lock` cannot barge. Every ticket has a
//!   heartbeat (one step per heartbeat for all of a context's waiters on a name), and is
//!   dropped from the row by its next write once it missed three. The
//!   first waiter also sleeps to the holder's deadline, so a holder that stopped without
//!   dying (frozen, busy) costs its ttl, not more. A name's queue holds at most 256 tickets.
//!   See [`IdbAcquire`]. [`IdbLocks::query`] lists the waiters of every name in the order
//!   they were queued.
//! - **Steal**: [`IdbLocks::steal`] ends the holder's lease and grants the name in one
//!   transaction, ahead of the queue: nobody gets it in between.
//! - **One transaction at a time per context**: a context sends its next transaction when
//!   the one before ended, so the `io_timeout` counts the wait behind other contexts only,
//!   and a burst of calls does not time out behind its own transactions.
//! - **A dead context frees its locks at once**, as with Web Locks: every context holds a
//!   presence Web Lock (`alkstore:ctx:<database>:<id>`) for its life and records its id in
//!   its leases and tickets; the browser drops the lock when the context dies (closed,
//!   navigated away, crashed, terminated), and other contexts then take its leases and skip
//!   its tickets without waiting for the ttl or the heartbeats (a waiting request on the
//!   presence lock wakes the waiters behind it the instant it dies). A frozen or busy
//!   context is not dead: the ttl rules it, and fencing stops its late writes. See
//!   [`IdbLocks::context_id`] and [`IdbConfig::with_presence`].
//! - **Holders are told** when their lease ends elsewhere: [`IdbLock::lapsed`] and
//!   [`IdbLock::keep_alive`] end with `Expired` as soon as another context force-releases
//!   the lease or finds it lapsed (over the `BroadcastChannel`), or the database is deleted
//!   under the store (then with `Unavailable` saying so); a renewal applies its answer to the handle when it commits, even when
//!   its future was dropped, so [`IdbLocks::holder`] always equals [`IdbLock::info`].
//! - **Failures** are [`LockError::Unavailable`], never a panic and never a lock believed held
//!   that is not: IndexedDB absent or forbidden (some private modes, opaque origins, storage
//!   blocked), an open blocked by another connection, a transaction that fails (quota) or does
//!   not finish within the [`io_timeout`](IdbConfig::with_io_timeout) (it is then aborted, so
//!   it changed nothing), a row or store this crate did not write, a clock past 2155. A
//!   database deleted or closed under the store is opened again by the next operation (and
//!   by a dropped handle's release: every transaction is sent when its call is made, polled
//!   or not). A database of the name without the stores (as `indexedDB.open(name)` alone
//!   makes) gets them with the next version.
//!
//! # Time
//! The engine's clock in a transaction is the latest of `Date.now()` (every context of the
//! origin reads the same system clock; `performance.now()` has a different origin in each
//! context), the clock floor kept in the database (the latest time a grant or a lapse was
//! decided at), and this context's own last reading carried forward by `performance.now()`.
//! So decisions never go back in time, and in a context that has run a transaction time keeps
//! moving at the real rate even while `Date.now()` stands still or steps back. Its resolution
//! is 1 ms (leases are stored in µs). Holders estimate their deadline the same way, so a
//! lease never looks live to its holder after the database found it lapsed.
//!
//! - Every clock steps **back** (an NTP correction): leases still end at their ttl; deadlines
//!   read ahead of `Date.now()` until the clocks catch up.
//! - Every clock steps **forward** by D: leases end up to D early; their holders are told as
//!   for any lapse, and the fencing token refuses their late writes.
//! - One context **ahead** by D (only code that overrides `Date.now()` there can do it): it
//!   sees other contexts' leases lapsed D early and may take them, with a larger token; the
//!   old holder's `lapsed()` and `keep_alive` end at once with `Expired`. The engine's time
//!   then stays D ahead of `Date.now()`; leases still last their ttl. One context **behind**
//!   the others changes nothing.
//! - A clock past 2155 is refused: that context's transactions answer `Unavailable` and write
//!   nothing (a clock far in the future cannot pin the database at the ceiling).
//!
//! Exclusion never depends on the clock; the fencing token guards every early end.
//!
//! # Contexts
//! - Windows, tabs and **dedicated workers** load the same wasm-bindgen bundle and share
//!   locks; SharedWorker is not needed (nor available in dedicated workers or on Chrome for
//!   Android).
//! - **Hidden tabs**: browsers throttle timers in background tabs (Chrome: once a second, and
//!   once a minute after five minutes hidden). Keep-alive renewals and waiter heartbeats run
//!   on timers, so hold leases and wait in a **dedicated worker** where a page may be hidden.
//! - **A context that stalls inside a transaction stalls every context of the origin.** This
//!   crate's transaction bodies never await anything, but a thread that blocks (a long loop,
//!   `alert`) right after sending a transaction holds it open until it runs again: the other
//!   contexts' operations then get `Unavailable` after their `io_timeout`, and `keep_alive`
//!   sends its timed-out renewals again while the deadline allows, so a stall shorter than
//!   what is left of a lease loses nothing.
//! - **Storage partitioning**: a cross-site iframe gets a storage partition (and a
//!   `BroadcastChannel` scope) of its own, so it does not share locks with the top-level page
//!   of the same origin.
//!
//! # Dependencies
//! `alkstore-mem` (the contract, its checks and errors, [`alkstore_mem::Fence`]) and
//! `alkstore-mem-web` (the browser's timers and `performance.now()`, in windows and workers
//! alike); `wasm-bindgen`, `js-sys` and `web-sys` (IndexedDB, BroadcastChannel: stable APIs
//! only; Web Locks through `js_sys::Reflect`) on wasm32.
//!
//! # On other targets
//! The crate compiles on every target (for docs.rs, rust-analyzer and `cargo check` of code
//! written for the browser), but IndexedDB exists only in browsers: natively,
//! [`IdbLocks::open`] answers `Unavailable`.
//!
//! # Example
//! ```no_run
//! use alkstore_idb::IdbLocks;
//! use core::time::Duration;
//!
//! # async fn run() -> Result<(), alkstore_idb::LockError> {
//! let locks = IdbLocks::open("my-app-locks").await?;
//! // In any tab or worker of the origin: one of them gets it.
//! if let Some(lock) = locks.try_lock("sync/outbox", "tab-1", Duration::from_secs(10)).await? {
//!     // ... flush the outbox, sending lock.token() with every write ...
//!     lock.release().await?;
//! }
//! // Wait up to 5 s, in line behind the waiters of every other tab and worker.
//! let waited = locks
//!     .acquire("sync/outbox", "tab-1", Duration::from_secs(10))
//!     .timeout(Duration::from_secs(5))
//!     .await?;
//! # drop(waited);
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations)]

mod acquire;
mod calls;
mod cancel;
mod config;
mod contract;
mod keep;
mod lock;
mod snapshot;
mod store;
mod sys;
mod tx;
mod util;

#[cfg(not(target_arch = "wasm32"))]
mod host;
#[cfg(target_arch = "wasm32")]
mod js;

pub use acquire::IdbAcquire;
pub use alkstore_mem::{LeaseInfo, LockError, Snapshot, TtlProblem, Waiting};
pub use config::IdbConfig;
pub use lock::IdbLock;
pub use store::IdbLocks;

pub use alkstore_mem::BoxedFuture;

/// The future of a one-shot call (`try_lock`, `holder`, `snapshot`, `force_release`,
/// `is_held`, `renew`, `release`): a named [`BoxedFuture`] (`Send` natively, not on wasm32).
pub type IdbFuture<'a, T> = BoxedFuture<'a, Result<T, LockError>>;

/// The future of [`IdbLock::keep_alive`].
pub type IdbKeepAlive<'a> = BoxedFuture<'a, LockError>;
/// The future of [`IdbLock::lapsed`].
pub type IdbLapsed<'a> = BoxedFuture<'a, LockError>;

/// Shared ownership: `Rc` in the browser (single-threaded), `Arc` on the host.
#[cfg(target_arch = "wasm32")]
pub(crate) type Shared<T> = std::rc::Rc<T>;
#[cfg(not(target_arch = "wasm32"))]
pub(crate) type Shared<T> = std::sync::Arc<T>;

#[cfg(target_arch = "wasm32")]
pub(crate) use util::{codec_err, unavailable};

/// The README's example, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
