//! alkstore-mem's lock contract across every tab and worker of a browser origin: named
//! exclusive locks with TTL leases, fencing tokens and FIFO waiting, kept in IndexedDB.
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations)]

mod acquire;
mod config;
mod contract;
mod lock;
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
