//! The browser backend (wasm32): IndexedDB transactions, the row codec, BroadcastChannel.

mod channel;
mod codec;
mod idb;
mod open;
mod txn;
mod watchdog;

use core::time::Duration;
use std::rc::Rc;

use alkstore_mem::LockError;

pub(crate) use channel::Registration;
pub(crate) use idb::date_now_us;
pub(crate) use txn::TxFuture;

use crate::sys::{Rows, Scope};
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
pub(crate) async fn open(name: &str, io_timeout: Duration) -> Result<Db, LockError> {
    idb::Database::open(name, io_timeout).await.map(Db)
}

impl Db {
    /// Runs `body` in one `readwrite` transaction over `scope`, created now.
    pub(crate) fn transact<R, B>(&self, scope: Scope, body: B) -> TxFuture<R>
    where
        R: 'static,
        B: FnOnce(&mut Rows, &mut Ctx<'_>) -> R + 'static,
    {
        self.0.transact(scope, body)
    }

    /// Registers a sleeper for wake-ups naming `id` or the lock `name`.
    pub(crate) fn register(&self, id: &str, name: &str) -> Registration {
        self.0.channel.register(id, name)
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
}

/// A unique id: random, plus a per-context counter.
pub(crate) fn new_id() -> String {
    use core::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let random = (js_sys::Math::random() * 9_007_199_254_740_991.0) as u64;
    format!("{random:x}.{n:x}")
}
