//! [`LockRegistry`] and its [`Lock`] handles: the table behind a mutex, read against a clock.

mod lock;
mod shard;

use alloc::sync::Arc;
use core::fmt;
use core::sync::atomic::AtomicU64;
use core::time::Duration;

use hashbrown::DefaultHashBuilder;

use crate::config::Config;
use crate::error::LockError;
use crate::lease::LeaseInfo;
use crate::padded::CachePadded;
use crate::snapshot::Snapshot;
use crate::state::{Request, State};
use crate::sync::Mutex;
use crate::table::{LockTable, Pool};
use crate::time::Clock;
use crate::trace;
use crate::validate::{name_refusal, quick_check};

pub use lock::Lock;
pub(crate) use shard::Shard;
use shard::{Common, Inner, SHARDS};

/// A shared registry of named exclusive locks with TTL leases.
///
/// Cheap to clone (clones share one registry) and `Send + Sync` when the clock is. Names are
/// spread by hash over a few shards (one on single-threaded wasm); in each, a mutex (a parking
/// `std::sync::Mutex` with the default `std` feature, a spin lock without it) guards a [`LockTable`](crate::LockTable) and the queues of waiting
/// [`acquire`](Self::acquire) calls. Fencing tokens come from one counter shared by all
/// shards, and `max_locks` counts the leases of all shards. Every operation reads the clock
/// exactly once, before taking a mutex, and passes the reading in. Nothing runs in the
/// background: expiry is a clock check at operation boundaries.
///
/// # Example
/// ```
/// use alkstore_mem::{LockRegistry, ManualClock};
/// use core::time::Duration;
///
/// let clock = ManualClock::new();
/// let registry = LockRegistry::new(clock.clone());
///
/// let lock = registry.try_lock("invoice/42", "worker-a", Duration::from_secs(10))?.unwrap();
/// // A busy lock is a value, not an error.
/// assert!(registry.try_lock("invoice/42", "worker-b", Duration::from_secs(10))?.is_none());
///
/// let first_token = lock.token();
/// assert!(lock.release());
/// let again = registry.try_lock("invoice/42", "worker-b", Duration::from_secs(10))?.unwrap();
/// assert!(again.token() > first_token, "fencing tokens strictly increase");
/// # Ok::<(), alkstore_mem::LockError>(())
/// ```
pub struct LockRegistry<C> {
    inner: Arc<Inner<C>>,
}

/// The shards' side of a grant that makes a [`Lock`]: here rather than in `shard`, so that
/// `shard` does not depend on `lock` (which depends on it).
impl<C: Clock> Inner<C> {
    /// A `try_lock` of quick-checked inputs in the shard of `hash`.
    #[inline]
    fn try_lock_in_shard(
        &self,
        hash: u64,
        name: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<Lock<C>>, LockError> {
        let shard = self.shard(hash);
        let mut granted = None;
        shard.with_state(|state, now, later| {
            state.try_lock(hash, name, owner, ttl, now, later, &mut granted)
        })?;
        let lock = granted.map(|lease| Lock::new(Arc::clone(shard), lease, ttl));
        if let Some(lock) = &lock {
            lock.traced_grant(trace::How::Directly);
        }
        Ok(lock)
    }
}

impl<C: Clock> LockRegistry<C> {
    /// The shard that holds the names with this hash.
    #[inline]
    pub(crate) fn shard(&self, hash: u64) -> &Arc<Shard<C>> {
        self.inner.shard(hash)
    }

    /// A registry with the default [`Config`] (unlimited leases, 256-byte names and owners).
    pub fn new(clock: C) -> Self {
        Self::with_config(clock, Config::default())
    }

    /// A registry enforcing `config`.
    pub fn with_config(clock: C, config: Config) -> Self {
        let hasher = DefaultHashBuilder::default();
        let common = Arc::new(Common {
            clock,
            read: C::now,
            config,
            hasher: hasher.clone(),
            floor: CachePadded(AtomicU64::new(0)),
        });
        let pool = Arc::new(Pool::default());
        let shards = core::array::from_fn(|_| {
            let table = LockTable::shard(config, hasher.clone(), Arc::clone(&pool));
            Arc::new(Shard {
                common: Arc::clone(&common),
                state: CachePadded(Mutex::new(State::new(table))),
            })
        });
        LockRegistry {
            inner: Arc::new(Inner { common, shards }),
        }
    }

    /// Takes the lock `name` for `owner` until `ttl` from now, if it is free.
    ///
    /// Returns `Ok(Some(lock))` when granted, with a fencing token larger than any this
    /// registry granted before; `Ok(None)` when the name is held by a live lease, the same
    /// owner's included (locks are not reentrant). A busy lock allocates nothing.
    ///
    /// # Errors
    /// [`LockError::InvalidName`] (empty, too long, control character),
    /// [`LockError::ReservedName`] (begins with `alk:`), [`LockError::InvalidOwner`] (empty or
    /// too long), [`LockError::InvalidTtl`] (zero), all before any state changes; and
    /// [`LockError::CapacityExceeded`] when the name is free but [`Config::max_locks`] live
    /// leases exist.
    ///
    /// # Example
    /// ```
    /// use alkstore_mem::{LockRegistry, ManualClock};
    /// use core::time::Duration;
    ///
    /// let registry = LockRegistry::new(ManualClock::new());
    /// match registry.try_lock("nightly-report", "host-1", Duration::from_secs(60))? {
    ///     Some(lock) => println!("running the report with token {}", lock.token()),
    ///     None => println!("someone else is on it"),
    /// }
    /// # Ok::<(), alkstore_mem::LockError>(())
    /// ```
    #[inline]
    pub fn try_lock(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<Lock<C>>, LockError> {
        quick_check(name, owner, ttl, &self.inner.common.config)?;
        let hash = self.inner.hash(name);
        match self.inner.try_lock_in_shard(hash, name, owner, ttl) {
            // Refused for want of room: the shard swept only itself. Lapsed leases in the
            // other shards count too, so sweep them all and try once more.
            Err(LockError::CapacityExceeded { .. }) if SHARDS > 1 => {
                self.try_lock_after_sweep(hash, name, owner, ttl)
            }
            answer => answer,
        }
    }

    /// `try_lock` once more, after sweeping every shard: for a name refused for want of room.
    #[cold]
    fn try_lock_after_sweep(
        &self,
        hash: u64,
        name: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<Lock<C>>, LockError> {
        self.inner.sweep();
        self.inner.try_lock_in_shard(hash, name, owner, ttl)
    }

    /// The live lease on `name`, or `None` when it is free, its lease lapsed, or `name` is not
    /// a valid lock name.
    ///
    /// # Example
    /// ```
    /// use alkstore_mem::{LockRegistry, ManualClock};
    /// use core::time::Duration;
    ///
    /// let registry = LockRegistry::new(ManualClock::new());
    /// assert!(registry.holder("db-migration").is_none());
    /// let _lock = registry.try_lock("db-migration", "deploy-7", Duration::from_secs(60))?;
    /// assert_eq!(registry.holder("db-migration").unwrap().owner(), "deploy-7");
    /// # Ok::<(), alkstore_mem::LockError>(())
    /// ```
    #[inline]
    pub fn holder(&self, name: &str) -> Option<LeaseInfo> {
        name_refusal(name, &self.inner.common.config).ok()?;
        let hash = self.inner.hash(name);
        self.inner
            .shard(hash)
            .with_state(|state, now, later| state.holder(hash, name, now, later))
    }

    /// Frees `name` whoever holds it, as an operator would free a stuck lock, and returns the
    /// lease it ended; `None` when the name had no live lease (or is not a valid name).
    ///
    /// The old holder's [`is_held`](Lock::is_held) turns false and its
    /// [`renew`](Lock::renew) fails with [`LockError::Expired`]; its `release` returns
    /// `false` and touches nothing. The lease goes to the first waiting
    /// [`acquire`](Self::acquire), if any, with a larger token, and waiters stay in order.
    ///
    /// # Example
    /// ```
    /// use alkstore_mem::{LockRegistry, ManualClock};
    /// use core::time::Duration;
    ///
    /// let registry = LockRegistry::new(ManualClock::new());
    /// let stuck = registry.try_lock("migration", "deploy-3", Duration::from_secs(3600))?.unwrap();
    /// let ended = registry.force_release("migration").expect("it was held");
    /// assert_eq!((ended.owner(), ended.token()), ("deploy-3", stuck.token()));
    /// assert!(!stuck.is_held());
    /// let next = registry.try_lock("migration", "deploy-4", Duration::from_secs(60))?.unwrap();
    /// assert!(next.token() > stuck.token());
    /// # Ok::<(), alkstore_mem::LockError>(())
    /// ```
    pub fn force_release(&self, name: &str) -> Option<LeaseInfo> {
        name_refusal(name, &self.inner.common.config).ok()?;
        let hash = self.inner.hash(name);
        let ended = self
            .inner
            .shard(hash)
            .with_state(|state, now, later| state.force_release(hash, name, now, later));
        if let Some(lease) = &ended {
            trace::force_released(lease);
        }
        ended
    }

    /// The held leases and the queued waiters of every name, for diagnostics and admin pages
    /// (what Web Locks' `query()` answers). Leases are sorted by name; waiters by name, then
    /// in queue order. Each shard is read at its own moment, so a snapshot taken while other
    /// threads work is a consistent view of each name, not of the whole registry.
    ///
    /// # Example
    /// ```
    /// use alkstore_mem::{LockRegistry, ManualClock};
    /// use core::time::Duration;
    ///
    /// let registry = LockRegistry::new(ManualClock::new());
    /// let _a = registry.try_lock("reports/daily", "cron-1", Duration::from_secs(60))?;
    /// let snapshot = registry.snapshot();
    /// assert_eq!(snapshot.held.len(), 1);
    /// assert_eq!(snapshot.held[0].owner(), "cron-1");
    /// assert!(snapshot.waiting.is_empty());
    /// # Ok::<(), alkstore_mem::LockError>(())
    /// ```
    pub fn snapshot(&self) -> Snapshot {
        let mut snapshot = Snapshot::default();
        for shard in &self.inner.shards {
            shard.with_state(|state, now, _| state.snapshot_into(now, &mut snapshot));
        }
        snapshot.held.sort_by(|a, b| a.name().cmp(b.name()));
        // Stable: waiters of one name keep their queue order.
        snapshot.waiting.sort_by(|a, b| a.name.cmp(&b.name));
        snapshot
    }

    /// Reclaims the memory of every lapsed lease now and returns how many there were.
    /// Optional: the table reclaims lapsed entries by itself, amortised, as it grows.
    pub fn sweep(&self) -> usize {
        self.inner.sweep()
    }

    /// How many [`acquire`](Self::acquire) calls are queued, on all names.
    pub fn waiters(&self) -> usize {
        let shards = self.inner.shards.iter();
        shards.map(|shard| shard.state.lock().waiters()).sum()
    }

    /// The clock this registry reads.
    pub fn clock(&self) -> &C {
        &self.inner.common.clock
    }

    /// The limits this registry enforces.
    pub fn config(&self) -> Config {
        self.inner.common.config
    }
}

impl<C: Clock> LockRegistry<C> {
    /// The checked request behind [`acquire`](Self::acquire): the same refusals as
    /// [`try_lock`](Self::try_lock), found before any waiting.
    pub(crate) fn request(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Request, LockError> {
        self.inner
            .check(name, owner, ttl)
            .map(|hash| Request::new(name, owner, hash, ttl))
    }
}

impl<C> Clone for LockRegistry<C> {
    fn clone(&self) -> Self {
        LockRegistry {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<C: fmt::Debug> fmt::Debug for LockRegistry<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let entries: usize = (self.inner.shards.iter())
            .map(|shard| shard.state.lock().table.entries())
            .sum();
        f.debug_struct("LockRegistry")
            .field("clock", &self.inner.common.clock)
            .field("config", &self.inner.common.config)
            .field("shards", &SHARDS)
            .field("entries", &entries)
            .finish_non_exhaustive()
    }
}
