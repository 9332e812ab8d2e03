//! The shards of a registry: [`Inner`], the shards together (picking one by a name's hash,
//! sweeping them all); [`Shard`], one shard's state behind a mutex, run with one clock reading
//! and its deferred work after the mutex; and [`Common`], what the shards share: the clock,
//! the config, the hasher and the registry-wide clock floor.

use alloc::sync::Arc;
use core::hash::BuildHasher;
use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;

use hashbrown::DefaultHashBuilder;

use crate::config::Config;
use crate::deferred::Deferred;
use crate::error::LockError;
use crate::padded::CachePadded;
use crate::state::State;
use crate::sync::Mutex;
use crate::time::{Clock, Timestamp};
use crate::validate::check_request;

/// How many shards a registry splits its names over. Where there can be threads, several,
/// so that threads working on different names rarely meet on one mutex or cache line;
/// single-threaded wasm has no use for more than one.
#[cfg(not(all(target_family = "wasm", not(target_feature = "atomics"))))]
pub(super) const SHARDS: usize = 8;
#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
pub(super) const SHARDS: usize = 1;

/// The registry proper: what every shard shares, and the shards.
pub(super) struct Inner<C> {
    pub(super) common: Arc<Common<C>>,
    pub(super) shards: [Arc<Shard<C>>; SHARDS],
}

/// What the shards share: read-only after construction, so that cores can cache it.
pub(crate) struct Common<C> {
    pub(crate) clock: C,
    /// `C::now`, for the one path that has no `C: Clock` bound to call it by: dropping a
    /// [`Lock`](crate::Lock) (so that `Lock<C>` needs no bound, and structs holding one
    /// repeat none).
    pub(super) read: fn(&C) -> Timestamp,
    pub(super) config: Config,
    /// The tables' hasher, so that names are hashed (and sharded) before any mutex is taken.
    pub(super) hasher: DefaultHashBuilder,
    /// The latest reading any shard's table has accepted (nanoseconds): the registry's notion
    /// of now never moves back below it, whichever name an operation is on. With a clock
    /// that advances, nearly every operation writes it; on a cache line of its own, so that
    /// those writes do not evict the read-only fields above from the other cores' caches.
    pub(super) floor: CachePadded<AtomicU64>,
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

/// One shard: a [`LockTable`](crate::LockTable) and its wait queues behind a mutex. Handles
/// and waiting futures hold their shard (not the registry), so that the reference counts
/// they touch are per shard too.
pub(crate) struct Shard<C> {
    pub(crate) common: Arc<Common<C>>,
    /// On a cache line of its own, away from the `Arc` counts.
    pub(super) state: CachePadded<Mutex<State>>,
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
    pub(super) fn with_state_unbound<R>(
        &self,
        f: impl FnOnce(&mut State, Timestamp, &mut Deferred) -> R,
    ) -> R {
        self.with_state_at((self.common.read)(&self.common.clock), f)
    }
}

impl<C: Clock> Inner<C> {
    /// Checks a lock request in full and hashes its name, before any lock is taken.
    pub(super) fn check(&self, name: &str, owner: &str, ttl: Duration) -> Result<u64, LockError> {
        check_request(name, owner, ttl, &self.common.config)?;
        Ok(self.hash(name))
    }

    /// The hash of `name` in every shard's table (it also picks the shard).
    #[inline]
    pub(super) fn hash(&self, name: &str) -> u64 {
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
}
