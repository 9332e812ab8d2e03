//! What the alkstore-mem benchmarks compare against, and the workload they share.
//!
//! - [`Floor`]: the least any named-lock registry must do: the same keys inserted into and
//!   removed from a `hashbrown` map behind a `spin` lock, with no leases, owners or tokens.
//! - [`HandRolled`] (native only): the lease map a user would write without this crate, a
//!   `std::sync::Mutex<HashMap<String, (owner, Instant, token)>>`.
//! - [`job_names`]: realistic lock names such as `tenant-3/job/000123`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// `count` distinct names shaped like real job locks: `tenant-{t}/job/{n:06}`.
pub fn job_names(count: usize) -> Vec<String> {
    (0..count)
        .map(|i| format!("tenant-{}/job/{i:06}", i % 17))
        .collect()
}

/// The floor: insert and remove the same keys in a `hashbrown` map behind a `spin` lock.
#[derive(Debug, Default)]
pub struct Floor {
    map: spin::Mutex<hashbrown::HashMap<String, ()>>,
}

impl Floor {
    /// Inserts `name` (allocating its key, as any registry must); `false` if present.
    pub fn insert(&self, name: &str) -> bool {
        self.map.lock().insert(name.into(), ()).is_none()
    }

    /// Removes `name`; `false` if absent.
    pub fn remove(&self, name: &str) -> bool {
        self.map.lock().remove(name).is_some()
    }
}

#[cfg(not(target_arch = "wasm32"))]
pub use hand_rolled::HandRolled;

#[cfg(not(target_arch = "wasm32"))]
mod hand_rolled {
    use std::collections::HashMap;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, Instant};

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
}
