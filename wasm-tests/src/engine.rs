//! [`Engine`]: what the conformance suite needs from an engine beyond the contract traits.

use core::future::Future;
use core::time::Duration;

use alkstore_mem::{Config, LockRegistry, LockStore, ManualClock};

/// The input limits a store under test enforces.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The longest lock name accepted, in bytes.
    pub max_name_len: usize,
    /// The longest owner accepted, in bytes.
    pub max_owner_len: usize,
}

impl Default for Limits {
    /// 256 bytes each, the core's defaults.
    fn default() -> Self {
        Limits {
            max_name_len: 256,
            max_owner_len: 256,
        }
    }
}

/// An engine under test: opens fresh stores and moves their time.
///
/// The bodies in [`bodies`](crate::bodies) use nothing else of an engine: every other call
/// goes through [`LockStore`], [`LockHandle`](alkstore_mem::LockHandle) and
/// [`AcquireFuture`](alkstore_mem::AcquireFuture). Time moves only through
/// [`advance`](Self::advance); a body never relies on real time passing or not passing,
/// only on it never running backwards.
pub trait Engine {
    /// The store this engine opens.
    type Store: LockStore + Clone + 'static;

    /// A fresh, empty store isolated from every other store this engine made, enforcing
    /// these limits.
    fn open(&self, limits: Limits) -> impl Future<Output = Self::Store>;

    /// Moves `store`'s time forward by `by` and makes every sleeper that is due by then
    /// re-check (memory: `ManualClock::advance`; Redis: the test offset on the server clock
    /// plus a wake-up publish).
    fn advance(&self, store: &Self::Store, by: Duration) -> impl Future<Output = ()>;
}

/// The in-memory engine: a [`LockRegistry`] on a fresh [`ManualClock`] per store.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryEngine;

impl Engine for MemoryEngine {
    type Store = LockRegistry<ManualClock>;

    async fn open(&self, limits: Limits) -> Self::Store {
        let config = Config::default()
            .with_max_name_len(limits.max_name_len)
            .with_max_owner_len(limits.max_owner_len);
        LockRegistry::with_config(ManualClock::new(), config)
    }

    async fn advance(&self, store: &Self::Store, by: Duration) {
        store.clock().advance(by);
    }
}
