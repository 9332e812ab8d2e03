//! [`LockRegistry`] and its [`Lock`] handles: the table behind a mutex, read against a clock.

use alloc::sync::Arc;
use core::fmt;
use core::hash::BuildHasher;
use core::sync::atomic::{AtomicU64, Ordering};
use core::task::Waker;
use core::time::Duration;

use hashbrown::DefaultHashBuilder;

use crate::acquire::Acquire;
use crate::config::Config;
use crate::deferred::Deferred;
use crate::error::LockError;
use crate::lapsed::{KeepAlive, Lapsed};
use crate::lease::LeaseInfo;
use crate::padded::CachePadded;
use crate::snapshot::Snapshot;
use crate::state::{Request, State};
use crate::sync::Mutex;
use crate::table::{LockTable, Pool};
use crate::time::{Clock, Timestamp};
use crate::timer::Timer;
use crate::trace;
use crate::validate::{check_request, name_refusal, quick_check};

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

/// How many shards a registry splits its names over. Where there can be threads, several,
/// so that threads working on different names rarely meet on one mutex or cache line;
/// single-threaded wasm has no use for more than one.
#[cfg(not(all(target_family = "wasm", not(target_feature = "atomics"))))]
const SHARDS: usize = 8;
#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
const SHARDS: usize = 1;

/// The registry proper: what every shard shares, and the shards.
struct Inner<C> {
    common: Arc<Common<C>>,
    shards: [Arc<Shard<C>>; SHARDS],
}

/// What the shards share: read-only after construction, so that cores can cache it.
pub(crate) struct Common<C> {
    pub(crate) clock: C,
    /// `C::now`, for the one path that has no `C: Clock` bound to call it by: dropping a
    /// [`Lock`] (so that `Lock<C>` needs no bound, and structs holding one repeat none).
    read: fn(&C) -> Timestamp,
    config: Config,
    /// The tables' hasher, so that names are hashed (and sharded) before any mutex is taken.
    hasher: DefaultHashBuilder,
    /// The latest reading any shard's table has accepted (nanoseconds): the registry's notion
    /// of now never moves back below it, whichever name an operation is on. With a clock
    /// that advances, nearly every operation writes it; on a cache line of its own, so that
    /// those writes do not evict the read-only fields above from the other cores' caches.
    floor: CachePadded<AtomicU64>,
}

impl<C> Common<C> {
    /// `reading` clamped to the registry-wide floor.
    #[inline]
    fn clamp(&self, reading: Timestamp) -> Timestamp {
        reading.max(Timestamp::from_nanos(self.floor.load(Ordering::Acquire)))
    }

    /// Raises the floor to a reading a table has accepted.
    #[inline]
    fn raise_floor(&self, latest: Timestamp) {
        if latest.as_nanos() > self.floor.load(Ordering::Relaxed) {
            self.floor.fetch_max(latest.as_nanos(), Ordering::AcqRel);
        }
    }
}

/// One shard: a [`LockTable`] and its wait queues behind a mutex. Handles and waiting
/// futures hold their shard (not the registry), so that the reference counts they touch
/// are per shard too.
pub(crate) struct Shard<C> {
    pub(crate) common: Arc<Common<C>>,
    /// On a cache line of its own, away from the `Arc` counts.
    state: CachePadded<Mutex<State>>,
}

impl<C: Clock> Shard<C> {
    /// Runs `f` on the state with one clock reading taken before the mutex (clamped to the
    /// registry's floor), raises the floor to what the table accepted, then does the work `f`
    /// deferred (waking waiters, dropping wakers, freeing text) after the mutex is released.
    #[inline]
    pub(crate) fn with_state<R>(
        &self,
        f: impl FnOnce(&mut State, Timestamp, &mut Deferred) -> R,
    ) -> R {
        self.with_state_at(self.common.clock.now(), f)
    }
}

impl<C> Shard<C> {
    /// [`with_state`](Self::with_state) with the clock's `reading` taken by the caller.
    /// Needs no `C: Clock` bound, which is what lets `Lock`'s drop use it.
    #[inline]
    fn with_state_at<R>(
        &self,
        reading: Timestamp,
        f: impl FnOnce(&mut State, Timestamp, &mut Deferred) -> R,
    ) -> R {
        let (result, later) = self.with_state_deferring(reading, f);
        later.run();
        result
    }

    /// [`with_state_at`](Self::with_state_at), handing back the deferred work instead of
    /// running it: for a caller that must record what the call did (a grant, a place in
    /// the queue) before any user code runs, so that a waker panicking during the deferred
    /// wake-ups cannot strand what was just done.
    #[inline]
    pub(crate) fn with_state_deferring<R>(
        &self,
        reading: Timestamp,
        f: impl FnOnce(&mut State, Timestamp, &mut Deferred) -> R,
    ) -> (R, Deferred) {
        let now = self.common.clamp(reading);
        let mut later = Deferred::default();
        let result = {
            let mut state = self.state.lock();
            let result = f(&mut state, now, &mut later);
            // A refused call leaves the table's latest reading, and so the floor, as it was.
            self.common.raise_floor(state.table.latest_now());
            result
        };
        (result, later)
    }

    /// [`with_state`](Self::with_state) without a `C: Clock` bound: the clock is read
    /// through the function pointer kept for that (only `Lock`'s drop needs this).
    #[inline]
    fn with_state_unbound<R>(
        &self,
        f: impl FnOnce(&mut State, Timestamp, &mut Deferred) -> R,
    ) -> R {
        self.with_state_at((self.common.read)(&self.common.clock), f)
    }
}

impl<C: Clock> Inner<C> {
    /// Checks a lock request in full and hashes its name, before any lock is taken.
    fn check(&self, name: &str, owner: &str, ttl: Duration) -> Result<u64, LockError> {
        check_request(name, owner, ttl, &self.common.config)?;
        Ok(self.hash(name))
    }

    /// The hash of `name` in every shard's table (it also picks the shard).
    #[inline]
    fn hash(&self, name: &str) -> u64 {
        self.common.hasher.hash_one(name)
    }

    /// The shard that holds the names with this hash. (Bits the tables do not use for
    /// buckets or control bytes.)
    #[allow(clippy::modulo_one, reason = "SHARDS is 1 on single-threaded wasm")]
    #[inline]
    pub(crate) fn shard(&self, hash: u64) -> &Arc<Shard<C>> {
        &self.shards[(hash >> 48) as usize % SHARDS]
    }

    /// Sweeps every shard, one at a time: what a full registry does before it refuses a new
    /// name, since lapsed entries in any shard count against `max_locks`.
    pub(crate) fn sweep(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| shard.with_state(|state, now, _| state.table.sweep(now)))
            .sum()
    }

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
        if let Some(lease) = &granted {
            trace::granted(lease, trace::How::Directly);
        }
        Ok(granted.map(|lease| Lock::new(Arc::clone(shard), lease, ttl)))
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

impl<C: Timer> LockRegistry<C> {
    /// Waits for the lock `name`, then holds it for `ttl`: without limit, unless bounded
    /// with [`Acquire::timeout`].
    ///
    /// The future resolves to `Ok(Some(lock))` once granted, `Ok(None)` when a bounded wait
    /// elapses first. With `.timeout(Duration::ZERO)` it answers exactly as
    /// [`try_lock`](Self::try_lock) does.
    ///
    /// Waiters on a name are served in arrival order: a release (explicit or by drop) hands
    /// the lease straight to the head waiter, with a new token and a deadline `ttl` from the
    /// hand-over, and a `try_lock` arriving in between gets `None`. When the holder's lease
    /// lapses instead, the head waiter takes it when it wakes at that deadline. No polling:
    /// each waiter sleeps on the clock's [`Timer`] until its own wait deadline (the head
    /// waiter: or the holder's deadline, if earlier) and is woken early by a hand-off.
    ///
    /// Cancel-safe: dropping the future removes its waiter, and a lease already handed to it
    /// passes on to the next waiter or is freed. The future owns a clone of the registry, so
    /// it is `'static`, and it is `Send` when the clock and its sleeps are.
    ///
    /// # Errors
    /// The same as `try_lock`, at the first poll, without waiting: [`LockError::InvalidName`],
    /// [`LockError::ReservedName`], [`LockError::InvalidOwner`], [`LockError::InvalidTtl`],
    /// and [`LockError::CapacityExceeded`] when the name is free but the table is full.
    ///
    /// # Example
    /// ```
    /// use alkstore_mem::{LockRegistry, ManualClock};
    /// use core::pin::pin;
    /// use core::task::{Context, Poll, Waker};
    /// use core::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let registry = LockRegistry::new(clock.clone());
    /// let holder = registry.try_lock("job", "a", Duration::from_secs(10))?.unwrap();
    ///
    /// let ttl = Duration::from_secs(10);
    /// let mut waiting = pin!(registry.acquire("job", "b", ttl).timeout(Duration::from_secs(5)));
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert!(waiting.as_mut().poll(&mut cx).is_pending());
    ///
    /// holder.release(); // hands the lease straight to "b"
    /// let Poll::Ready(Ok(Some(lock))) = waiting.as_mut().poll(&mut cx) else { panic!() };
    /// assert_eq!(lock.owner(), "b");
    /// # Ok::<(), alkstore_mem::LockError>(())
    /// ```
    pub fn acquire(&self, name: &str, owner: &str, ttl: Duration) -> Acquire<C> {
        let request = self
            .inner
            .check(name, owner, ttl)
            .map(|hash| Request::new(name, owner, hash, ttl));
        Acquire::new(self.clone(), request, Duration::MAX)
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

/// A held lease on one lock name: renew it, release it, or let it go.
///
/// Dropping a `Lock` releases it (as [`release`](Self::release) does, handing it to the
/// first waiting [`acquire`](LockRegistry::acquire) if any); [`detach`](Self::detach)
/// gives up the handle and lets the lease run to its deadline instead. A `Lock` is `Send`
/// and `Sync` when its clock is `Send + Sync`, and is not `Clone`: one grant, one handle.
/// Its deadline and ttl are kept in atomics, so that [`keep_alive`](Self::keep_alive) can
/// renew through `&self` while the work it guards reads the handle.
///
/// # Example
/// ```
/// use alkstore_mem::{LockError, LockRegistry, ManualClock};
/// use core::time::Duration;
///
/// let clock = ManualClock::new();
/// let registry = LockRegistry::new(clock.clone());
/// let mut lock = registry.try_lock("sync", "a", Duration::from_secs(10))?.unwrap();
///
/// clock.advance(Duration::from_secs(8));
/// lock.renew(Duration::from_secs(10))?; // now + 10 s
/// clock.advance(Duration::from_secs(9));
/// assert!(lock.is_held());
///
/// clock.advance(Duration::from_secs(1));
/// assert!(matches!(lock.renew(Duration::from_secs(10)), Err(LockError::Expired { .. })));
/// assert!(!lock.release(), "it had lapsed: false, not an error");
/// # Ok::<(), LockError>(())
/// ```
#[must_use = "dropping a Lock releases it at once; call detach() to let the lease run to its deadline"]
pub struct Lock<C> {
    shard: Arc<Shard<C>>,
    /// The grant: name, owner, token (its `deadline` is the grant's; `deadline` below follows
    /// renewals).
    lease: LeaseInfo,
    /// The deadline as of the last grant or renew, in nanoseconds.
    deadline: AtomicU64,
    /// The ttl of the last grant or renew, in nanoseconds (saturated: see [`ttl_nanos`]).
    ttl: AtomicU64,
    /// Whether dropping the handle releases the lease.
    release_on_drop: bool,
}

/// A ttl as the handle keeps it: whole nanoseconds, saturating at `u64::MAX` (584 years),
/// which reads back as `Duration::MAX`.
fn ttl_nanos(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_nanos()).unwrap_or(u64::MAX)
}

impl<C: Clock> Lock<C> {
    pub(crate) fn new(shard: Arc<Shard<C>>, lease: LeaseInfo, ttl: Duration) -> Self {
        Lock {
            shard,
            deadline: AtomicU64::new(lease.deadline().as_nanos()),
            ttl: AtomicU64::new(ttl_nanos(ttl)),
            lease,
            release_on_drop: true,
        }
    }
}

impl<C> Lock<C> {
    /// The lock's name.
    pub fn name(&self) -> &str {
        self.lease.name()
    }

    /// The owner the lease was granted to.
    pub fn owner(&self) -> &str {
        self.lease.owner()
    }

    /// The fencing token: strictly larger than every token granted before it by this
    /// registry, and kept by [`renew`](Self::renew). Pass it to whatever the lock protects so
    /// that a stale holder's late writes can be told apart and refused.
    #[inline]
    pub fn token(&self) -> u64 {
        self.lease.token()
    }

    /// The deadline as of the last grant or renew (a renewal by
    /// [`keep_alive`](Self::keep_alive) included): the lease is live while `now < deadline`.
    #[inline]
    pub fn deadline(&self) -> Timestamp {
        Timestamp::from_nanos(self.deadline.load(Ordering::Acquire))
    }

    /// This grant as a [`LeaseInfo`]: name, owner, token, and the deadline as of the last
    /// grant or renew.
    pub fn info(&self) -> LeaseInfo {
        let mut info = self.lease.clone();
        info.deadline = self.deadline();
        info
    }

    /// The ttl of the last grant or [`renew`](Self::renew): what
    /// [`keep_alive`](Self::keep_alive) renews to. (Kept in whole nanoseconds; a ttl beyond
    /// 584 years reads back as `Duration::MAX`.)
    #[inline]
    pub fn ttl(&self) -> Duration {
        match self.ttl.load(Ordering::Acquire) {
            u64::MAX => Duration::MAX,
            nanos => Duration::from_nanos(nanos),
        }
    }
}

impl<C: Clock> Lock<C> {
    /// How long the lease has left now: zero once it lapsed or was released. (In-memory
    /// only: a remote engine would answer with a round trip's worth of error.)
    pub fn remaining(&self) -> Duration {
        self.shard.with_state(|state, now, _| {
            let live = state.table.live_deadline_of(&self.lease, now);
            live.map_or(Duration::ZERO, |deadline| {
                if deadline == Timestamp::MAX {
                    // Never lapses.
                    return Duration::MAX;
                }
                deadline.saturating_duration_since(state.table.latest_now())
            })
        })
    }

    /// Whether the lease is still live now. Allocates nothing.
    #[inline]
    pub fn is_held(&self) -> bool {
        self.shard
            .with_state(|state, now, _| state.table.is_held(&self.lease, now))
    }

    /// Resets the deadline to `now + ttl` (an absolute reset: a shorter `ttl` moves it
    /// earlier) and keeps the token. Allocates nothing when it succeeds.
    ///
    /// # Errors
    /// [`LockError::InvalidTtl`] when `ttl` is zero; [`LockError::Expired`] when the lease
    /// lapsed (at or after its deadline), whether or not anyone took the name since. A
    /// refused renew changes nothing and does not revive the lease.
    #[inline]
    pub fn renew(&mut self, ttl: Duration) -> Result<(), LockError> {
        self.renew_shared(ttl)
    }

    /// [`renew`](Self::renew) through a shared reference: what `keep_alive` renews with.
    #[inline]
    pub(crate) fn renew_shared(&self, ttl: Duration) -> Result<(), LockError> {
        let (lease, known) = (&self.lease, self.deadline());
        let renewed = self
            .shard
            .with_state(|state, now, later| state.renew(lease, known, ttl, now, later));
        match renewed {
            Ok(deadline) => {
                self.deadline.store(deadline.as_nanos(), Ordering::Release);
                self.ttl.store(ttl_nanos(ttl), Ordering::Release);
                Ok(())
            }
            Err(LockError::Expired {
                name,
                token,
                deadline,
                now,
                ..
            }) => {
                let lost = LockError::Expired {
                    name,
                    token,
                    ttl: self.ttl(),
                    deadline,
                    now,
                };
                trace::renew_refused(&self.lease, &lost);
                Err(lost)
            }
            Err(refused) => {
                trace::renew_refused(&self.lease, &refused);
                Err(refused)
            }
        }
    }

    /// The error for this lease found gone at `now`, on the registry's clock.
    pub(crate) fn expired_at(&self, now: Timestamp) -> LockError {
        LockError::Expired {
            name: self.lease.name().into(),
            token: self.lease.token(),
            ttl: self.ttl(),
            deadline: self.deadline(),
            now,
        }
    }

    /// Reports (with the `tracing` feature) that a watcher found this lease gone.
    pub(crate) fn saw_lapse(&self, how: &LockError) {
        trace::lapse_seen(&self.lease, how);
    }

    /// Releases the lease. Returns `true` when it was live and is now free, `false` when it
    /// had already lapsed (never an error). Never touches a newer lease of the same name.
    #[inline]
    pub fn release(mut self) -> bool {
        self.release_on_drop = false;
        self.release_now()
    }

    /// Gives up the handle without releasing: the lease stays until its deadline.
    pub fn detach(mut self) {
        self.release_on_drop = false;
    }

    #[inline]
    fn release_now(&self) -> bool {
        self.shard
            .with_state(|state, now, later| state.release(&self.lease, now, later))
    }
}

impl<C: Timer> Lock<C> {
    /// Renews the lease to its [`ttl`](Self::ttl) every `every` and returns only when a
    /// renewal fails, with that error: [`LockError::Expired`] once the lease is lost (it
    /// lapsed between renewals, or was [`force_release`](LockRegistry::force_release)d).
    /// Race it against the work, so that the work stops when the lease is gone; dropping the
    /// future stops the renewals. It takes `&self`: the work can read the handle meanwhile.
    ///
    /// The interval is [`keep_alive_interval`](crate::contract::keep_alive_interval): zero
    /// means a third of the ttl, and anything above half the ttl is clamped to half, so that
    /// a typo cannot turn keep-alive off.
    ///
    /// # Example
    /// ```
    /// use alkstore_mem::{LockError, LockRegistry, ManualClock};
    /// use core::pin::pin;
    /// use core::task::{Context, Poll, Waker};
    /// use core::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let registry = LockRegistry::new(clock.clone());
    /// let mut lock = registry.try_lock("job", "a", Duration::from_secs(3))?.unwrap();
    /// let token = lock.token();
    /// {
    ///     let mut alive = pin!(lock.keep_alive(Duration::from_secs(1)));
    ///     let mut cx = Context::from_waker(Waker::noop());
    ///     for _ in 0..10 {
    ///         assert!(alive.as_mut().poll(&mut cx).is_pending());
    ///         assert_eq!(lock.token(), token, "the handle is readable meanwhile");
    ///         clock.advance(Duration::from_secs(1)); // each second, a renewal to 3 s
    ///     }
    ///     assert_eq!(registry.holder("job").unwrap().token(), token, "renewed, still held");
    ///     registry.force_release("job");
    ///     clock.advance(Duration::from_secs(1));
    ///     let Poll::Ready(err) = alive.as_mut().poll(&mut cx) else { panic!() };
    ///     assert!(matches!(err, LockError::Expired { .. }));
    /// }
    /// # Ok::<(), LockError>(())
    /// ```
    pub fn keep_alive(&self, every: Duration) -> KeepAlive<'_, C> {
        KeepAlive::new(self, every)
    }

    /// Resolves once the lease is no longer held (lapsed, released through another path, or
    /// force-released), with how it ended: [`LockError::Expired`]. It sleeps to the deadline
    /// and checks again, so renewals push it out.
    ///
    /// # Example
    /// ```
    /// use alkstore_mem::{LockRegistry, ManualClock};
    /// use core::pin::pin;
    /// use core::task::{Context, Poll, Waker};
    /// use core::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let registry = LockRegistry::new(clock.clone());
    /// let lock = registry.try_lock("job", "a", Duration::from_secs(5))?.unwrap();
    /// let mut lapsed = pin!(lock.lapsed());
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert!(lapsed.as_mut().poll(&mut cx).is_pending());
    /// clock.advance(Duration::from_secs(7));
    /// let Poll::Ready(why) = lapsed.as_mut().poll(&mut cx) else { panic!() };
    /// assert_eq!(
    ///     why.to_string(),
    ///     "lease on lock \"job\" (fencing token 1) lapsed 2s ago, at the end of its 5s ttl"
    /// );
    /// # Ok::<(), alkstore_mem::LockError>(())
    /// ```
    pub fn lapsed(&self) -> Lapsed<'_, C> {
        Lapsed::new(self)
    }

    /// [`lapsed`](Self::lapsed)'s check: the lease's deadline if it is live, with `waker`
    /// kept (as watcher `id`) to be woken should it end early (force-released); else the
    /// reading it was found gone at.
    pub(crate) fn watch(&self, id: &mut Option<u64>, waker: Waker) -> Result<Timestamp, Timestamp> {
        let lease = &self.lease;
        self.shard
            .with_state(|state, now, later| state.watch(lease, id, now, waker, later))
    }

    /// Forgets the watcher that [`watch`](Self::watch) kept as `watcher`, if any, and
    /// clears it.
    pub(crate) fn unwatch(&self, watcher: &mut Option<u64>) {
        if let Some(id) = watcher.take() {
            let token = self.lease.token();
            self.shard
                .with_state(|state, _, later| state.unwatch(token, id, later));
        }
    }

    /// The clock the lease is measured on.
    pub(crate) fn clock(&self) -> &C {
        &self.shard.common.clock
    }
}

impl<C> Drop for Lock<C> {
    #[inline]
    fn drop(&mut self) {
        if self.release_on_drop {
            let lease = &self.lease;
            self.shard
                .with_state_unbound(|state, now, later| state.release(lease, now, later));
        }
    }
}

impl<C> fmt::Debug for Lock<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock")
            .field("name", &self.lease.name())
            .field("owner", &self.lease.owner())
            .field("token", &self.lease.token())
            .field("deadline", &self.deadline())
            .field("ttl", &self.ttl())
            .finish()
    }
}
