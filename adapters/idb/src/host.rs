//! The host stand-ins (every target but wasm32): there is no IndexedDB, so [`open`] answers
//! `Unavailable` and no store is ever made. The other stand-ins only give the rest of the
//! crate something to compile against (for docs.rs, rust-analyzer and `cargo check`).

use core::future::{Future, pending};
use core::marker::PhantomData;
use core::pin::Pin;
use core::task::{Context, Poll};

use alkstore_mem::LockError;

use crate::sys::{Answer, OnCommit, Rows, Scope, TxError};
use crate::tx::ops::Ctx;
use crate::util::unavailable;

const NO_INDEXEDDB: &str = "IndexedDB exists only in browsers: build for wasm32-unknown-unknown";

/// An open database: never made on the host.
#[derive(Debug)]
#[allow(dead_code)]
pub(crate) struct Db {
    name: String,
}

/// `IdbLocks::open` on the host: always `Unavailable`.
pub(crate) async fn open(name: &str, _config: &crate::IdbConfig) -> Result<Db, LockError> {
    Err(unavailable(format!("{NO_INDEXEDDB} to open {name:?}")))
}

impl Db {
    pub(crate) fn transact<R, B>(&self, scope: Scope, body: B) -> TxFuture<R>
    where
        R: 'static,
        B: FnOnce(&mut Rows, &mut Ctx<'_>) -> R + 'static,
    {
        self.transact_then(scope, body, None)
    }

    pub(crate) fn transact_then<R, B>(
        &self,
        _scope: Scope,
        _body: B,
        _on_commit: Option<OnCommit<R>>,
    ) -> TxFuture<R>
    where
        R: 'static,
        B: FnOnce(&mut Rows, &mut Ctx<'_>) -> R + 'static,
    {
        TxFuture(PhantomData)
    }

    pub(crate) fn register(&self, _id: &str, _name: &str, _token: Option<u64>) -> Registration {
        Registration
    }

    #[cfg(feature = "test-clock")]
    pub(crate) fn post_all(&self) {}

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn now_us(&self) -> u64 {
        date_now_us()
    }

    pub(crate) fn generation(&self) -> u64 {
        0
    }

    pub(crate) fn news(&self) -> u64 {
        0
    }

    pub(crate) async fn confirm_dead(&self, _ids: Vec<String>) -> bool {
        false
    }

    pub(crate) fn watch_contexts(&self, _ids: &[String]) {}

    pub(crate) fn wake_ids(&self, _ids: &[String]) {}

    pub(crate) fn note_refresh(&self, _name: &str, _at: u64) {}

    pub(crate) fn refreshed(&self, _name: &str) -> u64 {
        0
    }

    pub(crate) fn context_id(&self) -> String {
        String::new()
    }
}

/// A transaction's future: `Unavailable` on the host.
pub(crate) struct TxFuture<R>(PhantomData<fn() -> R>);

impl<R> Future for TxFuture<R> {
    type Output = Answer<R>;

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(Err(TxError {
            error: unavailable(NO_INDEXEDDB),
            timed_out: false,
        }))
    }
}

/// A sleeper's registration: never woken on the host.
pub(crate) struct Registration;

impl Registration {
    pub(crate) async fn notified(&self) {
        pending::<()>().await;
    }
}

/// The wall clock in µs.
pub(crate) fn date_now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// A process-unique id.
pub(crate) fn new_id() -> String {
    use core::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("h{:x}", NEXT.fetch_add(1, Ordering::Relaxed))
}
