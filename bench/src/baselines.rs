//! The baselines and the workload, in one file that every benchmark compiles into its own
//! crate (`#[path = "../src/baselines.rs"] mod baselines;`), so that in the downstream build
//! (no LTO) they get the inlining a user's own code would get, while the registry is reached
//! across the crate boundary as a user reaches it. The library re-exports the same items.
//!
//! - [`Floor`]: the least any named-lock registry must do: the same keys inserted into and
//!   removed from a `hashbrown` map behind a `spin` lock, with no leases, owners or tokens.
//!   [`StdFloor`] is the same table behind a `std::sync::Mutex`, to measure the lock choice.
//! - [`HandRolled`] (native only): the lease map a user would write without this crate, a
//!   `std::sync::Mutex<HashMap<String, (owner, Instant, token)>>`.
//! - [`DashLeases`] (native only): the same lease map on a sharded `DashMap`.
//! - [`job_names`]: realistic lock names such as `tenant-3/job/000123`.

/// `count` distinct names shaped like real job locks: `tenant-{t}/job/{n:06}`.
pub fn job_names(count: usize) -> Vec<String> {
    (0..count)
        .map(|i| format!("tenant-{}/job/{i:06}", i % 17))
        .collect()
}

/// The table the floors guard: names only, no lease data.
pub type Names = hashbrown::HashMap<String, ()>;

/// A lock around a [`Names`] table: `spin::Mutex` or `std::sync::Mutex`.
pub trait TableLock: Default + Sync {
    /// Runs `f` with the table locked.
    fn with<R>(&self, f: impl FnOnce(&mut Names) -> R) -> R;
}

impl TableLock for spin::Mutex<Names> {
    #[inline]
    fn with<R>(&self, f: impl FnOnce(&mut Names) -> R) -> R {
        f(&mut self.lock())
    }
}

impl TableLock for std::sync::Mutex<Names> {
    #[inline]
    fn with<R>(&self, f: impl FnOnce(&mut Names) -> R) -> R {
        f(&mut self
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}

/// Insert and remove keys in a `hashbrown` map behind the lock `L`.
#[derive(Debug, Default)]
pub struct LockedNames<L> {
    map: L,
}

/// The floor: a `hashbrown` map behind a `spin` lock.
pub type Floor = LockedNames<spin::Mutex<Names>>;

/// The floor's table behind a parking `std::sync::Mutex` instead of a spin lock.
pub type StdFloor = LockedNames<std::sync::Mutex<Names>>;

impl<L: TableLock> LockedNames<L> {
    /// Inserts `name` (allocating its key, as any registry must); `false` if present.
    pub fn insert(&self, name: &str) -> bool {
        self.map.with(|map| map.insert(name.into(), ()).is_none())
    }

    /// Removes `name`; `false` if absent.
    pub fn remove(&self, name: &str) -> bool {
        self.map.with(|map| map.remove(name).is_some())
    }
}

#[cfg(not(target_arch = "wasm32"))]
pub use native::{DashLeases, HandRolled};

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use std::collections::HashMap;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    use dashmap::DashMap;
    use dashmap::mapref::entry::Entry;

    /// A lease map as a user would write it: std `Mutex<HashMap>`, owner, deadline, token.
    #[derive(Debug, Default)]
    pub struct HandRolled {
        leases: Mutex<HashMap<String, (String, Instant, u64)>>,
        next_token: AtomicU64,
    }

    impl HandRolled {
        /// Takes `name` for `owner` until `ttl` from now; the token, or `None` when busy.
        pub fn try_lock(&self, name: &str, owner: &str, ttl: Duration) -> Option<u64> {
            let now = Instant::now();
            let mut leases = self.leases.lock().unwrap();
            if let Some((_, deadline, _)) = leases.get(name) {
                if *deadline > now {
                    return None;
                }
            }
            let token = self.next_token.fetch_add(1, Ordering::Relaxed) + 1;
            leases.insert(name.to_owned(), (owner.to_owned(), now + ttl, token));
            Some(token)
        }

        /// Releases `name` if it still carries `token`.
        pub fn release(&self, name: &str, token: u64) -> bool {
            let mut leases = self.leases.lock().unwrap();
            match leases.get(name) {
                Some((_, _, t)) if *t == token => leases.remove(name).is_some(),
                _ => false,
            }
        }
    }

    /// The same lease map on a sharded `DashMap` (a lock per shard, SipHash): what a user
    /// reaching for a concurrent map would write.
    #[derive(Debug, Default)]
    pub struct DashLeases {
        leases: DashMap<String, (String, Instant, u64)>,
        next_token: AtomicU64,
    }

    impl DashLeases {
        /// Takes `name` for `owner` until `ttl` from now, if it is free or its lease lapsed;
        /// the token, or `None` when busy. One shard lock and one hash per call (the key is
        /// allocated up front, even when the name turns out busy).
        pub fn try_lock(&self, name: &str, owner: &str, ttl: Duration) -> Option<u64> {
            let now = Instant::now();
            let grant = || {
                let token = self.next_token.fetch_add(1, Ordering::Relaxed) + 1;
                ((owner.to_owned(), now + ttl, token), token)
            };
            match self.leases.entry(name.to_owned()) {
                Entry::Occupied(held) if held.get().1 > now => None,
                Entry::Occupied(mut lapsed) => {
                    let (lease, token) = grant();
                    lapsed.insert(lease);
                    Some(token)
                }
                Entry::Vacant(free) => {
                    let (lease, token) = grant();
                    free.insert(lease);
                    Some(token)
                }
            }
        }

        /// Releases `name` if it still carries `token`.
        pub fn release(&self, name: &str, token: u64) -> bool {
            self.leases
                .remove_if(name, |_, lease| lease.2 == token)
                .is_some()
        }
    }
}
