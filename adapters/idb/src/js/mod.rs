//! The browser backend (wasm32): IndexedDB transactions, the row codec, BroadcastChannel,
//! this context's view of the engine's clock.

mod basics;
mod channel;
mod clock;
mod codec;
mod idb;
mod open;
mod pipeline;
mod presence;
mod slot;
mod txn;
mod watchdog;

use std::rc::Rc;

use alkstore_mem::LockError;

pub(crate) use channel::Registration;
pub(crate) use txn::TxFuture;

use crate::IdbConfig;
use crate::sys::{OnCommit, Rows, Scope};
use crate::tx::ops::Ctx;

/// An open database and its wake-up channel, shared by a store's clones.
#[derive(Clone)]
pub(crate) struct Db(Rc<idb::Database>);

impl core::fmt::Debug for Db {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Db").field(&self.0.name).finish()
    }
}

/// Opens (creating on first use) the database `name`.
pub(crate) async fn open(name: &str, config: &IdbConfig) -> Result<Db, LockError> {
    let (io, presence) = (config.io_timeout(), config.presence());
    idb::Database::open(name, io, presence).await.map(Db)
}

impl Db {
    /// Runs `body` in one `readwrite` transaction over `scope`, sent now (see
    /// [`transact_then`](Self::transact_then)).
    pub(crate) fn transact<R, B>(&self, scope: Scope, body: B) -> TxFuture<R>
    where
        R: 'static,
        B: FnOnce(&mut Rows, &mut Ctx<'_>) -> R + 'static,
    {
        self.transact_then(scope, body, None)
    }

    /// Runs `body` in one `readwrite` transaction over `scope`, sent now (or as soon as the
    /// connection is open again), polled or not; `on_commit` sees the answer once it
    /// committed, even if the future was dropped.
    pub(crate) fn transact_then<R, B>(
        &self,
        scope: Scope,
        body: B,
        on_commit: Option<OnCommit<R>>,
    ) -> TxFuture<R>
    where
        R: 'static,
        B: FnOnce(&mut Rows, &mut Ctx<'_>) -> R + 'static,
    {
        self.0.transact(txn::Job {
            scope,
            body: Box::new(body),
            on_commit,
        })
    }

    /// Registers a sleeper for wake-ups naming `id`, the lock `name` or the lease `token`.
    pub(crate) fn register(&self, id: &str, name: &str, token: Option<u64>) -> Registration {
        self.0.channel.register(id, name, token)
    }

    /// Wakes this context's waiters `ids` (see `ops::news`).
    pub(crate) fn wake_ids(&self, ids: &[String]) {
        self.0.channel.wake_ids(ids);
    }

    /// Notes that a waiter steps on `name` now (`at`, µs), refreshing its siblings' tickets.
    pub(crate) fn note_refresh(&self, name: &str, at: u64) {
        self.0.channel.note_refresh(name, at);
    }

    /// When a waiter of this store last stepped on `name` (µs; 0: never).
    pub(crate) fn refreshed(&self, name: &str) -> u64 {
        self.0.channel.refreshed(name)
    }

    /// Wakes every sleeper of every context.
    #[cfg(feature = "test-clock")]
    pub(crate) fn post_all(&self) {
        self.0.channel.post_all();
    }

    /// The database's name.
    pub(crate) fn name(&self) -> &str {
        &self.0.name
    }

    /// The engine's time as this context estimates it (µs).
    pub(crate) fn now_us(&self) -> u64 {
        self.0.clock.now_us()
    }

    /// Checks the contexts `ids` (read from rows before this call) against the browser's
    /// Web Locks: `true` when one of them is dead (it is known dead from now on).
    pub(crate) async fn confirm_dead(&self, ids: Vec<String>) -> bool {
        self.0
            .presence
            .confirm(ids.iter().map(String::as_str))
            .await
    }

    /// Wakes this context's waiters as soon as one of the contexts `ids` dies.
    pub(crate) fn watch_contexts(&self, ids: &[String]) {
        self.0.presence.watch(ids.iter().map(String::as_str));
    }

    /// This context's id in the rows (empty: it holds no presence lock).
    pub(crate) fn context_id(&self) -> String {
        self.0.presence.me().to_owned()
    }

    /// How many connections the browser closed under this store so far.
    pub(crate) fn generation(&self) -> u64 {
        self.0.generation()
    }

    /// How many messages ending a lease this context received so far.
    pub(crate) fn news(&self) -> u64 {
        self.0.channel.news()
    }
}

/// A unique id: random, plus a per-context counter.
pub(crate) fn new_id() -> String {
    use core::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let random = (js_sys::Math::random() * 9_007_199_254_740_991.0) as u64;
    format!("{random:x}.{n:x}")
}
