//! [`LockTable`]: the lock contract as a pure, deterministic state machine.

mod grant;
mod pool;
mod reclaim;
mod slot;

use alloc::sync::Arc;
use core::fmt;
use core::hash::BuildHasher;
use core::time::Duration;

use hashbrown::{DefaultHashBuilder, HashTable};

use crate::config::Config;
use crate::error::LockError;
use crate::lease::LeaseInfo;
use crate::time::{Timestamp, live};
use crate::validate::{check_request, check_ttl, name_refusal};

pub(crate) use grant::{Grant, Joined, LeaseSource, OwnedText};
pub(crate) use pool::Pool;
pub(crate) use reclaim::{free_if_empty, shrink_if_sparse};
use slot::{LAPSED, Slot};

/// The table never sweeps below this many entries: sweeping a tiny table saves nothing.
const MIN_SWEEP_LEN: usize = 16;

/// The named-lock contract as a sans-IO state machine: no clock, no lock, no background task.
///
/// Every method that depends on time takes `now`. The table remembers the latest `now` it
/// was given (by a call it did not refuse) and clamps earlier readings to it, so its notion
/// of time never moves backwards. A lease is live while `now < deadline`; at the deadline it
/// lapses silently and the name is free again. A deadline of [`Timestamp::MAX`] (where
/// `now + ttl` saturates) never lapses, so even a reading of `MAX` grants a live lease. Lapsed entries are reclaimed lazily: in place when their
/// name is locked again, when their holder releases them, and by an amortised sweep each
/// time the table has doubled since the last one (or when [`Config::max_locks`] is reached),
/// so memory stays proportional to live leases.
///
/// [`LockRegistry`](crate::LockRegistry) wraps one `LockTable` behind a mutex and a clock;
/// use the table directly when you own the time source and the synchronisation.
///
/// Methods: [`try_lock`](Self::try_lock) grants; [`renew`](Self::renew),
/// [`release`](Self::release) and [`is_held`](Self::is_held) take back the [`LeaseInfo`] of
/// a grant; [`holder`](Self::holder) inspects a name; [`sweep`](Self::sweep) reclaims
/// lapsed entries eagerly.
///
/// # Example
/// ```
/// use alkstore_mem::{Config, LockTable, Timestamp};
/// use core::time::Duration;
///
/// let mut table = LockTable::new(Config::default());
/// let t0 = Timestamp::from_millis(0);
/// let mut lease = table.try_lock("job-1", "a", Duration::from_millis(100), t0).unwrap().unwrap();
/// assert!(table.try_lock("job-1", "b", Duration::from_millis(100), t0).unwrap().is_none());
///
/// table.renew(&mut lease, Duration::from_millis(100), Timestamp::from_millis(50)).unwrap();
/// assert_eq!(lease.deadline(), Timestamp::from_millis(150));
///
/// // At the deadline the lease has lapsed and the name is free for someone else.
/// let t150 = Timestamp::from_millis(150);
/// let next = table.try_lock("job-1", "b", Duration::from_millis(100), t150).unwrap().unwrap();
/// assert!(next.token() > lease.token());
/// assert!(!table.release(&lease, t150), "a stale release never touches the newer lease");
/// ```
pub struct LockTable {
    entries: HashTable<Slot>,
    hasher: DefaultHashBuilder,
    config: Config,
    /// The latest `now` seen; earlier readings are clamped to it.
    latest: Timestamp,
    /// The token of the next grant.
    next_token: u64,
    /// The entry count at which the next amortised sweep runs.
    sweep_at: usize,
    /// Operations left before the next amortised sweep check: lookups and removals sweep
    /// too, not only inserts, so that lapsed entries go even when no new name comes.
    ops_until_sweep: usize,
    /// No entry's deadline is earlier than this (exact after a sweep, a lower bound otherwise).
    earliest_deadline: Timestamp,
    /// The counters shared with the other shards of a registry, if this table is one.
    pool: Option<Arc<Pool>>,
    /// Hashes of names whose slots a sweep must keep even when lapsed, with how many pins
    /// each has: the names a registry has waiters for, whose slots go to those waiters.
    pins: HashTable<(u64, usize)>,
}

impl LockTable {
    /// An empty table enforcing `config`.
    pub fn new(config: Config) -> Self {
        LockTable {
            entries: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            config,
            latest: Timestamp::ZERO,
            next_token: 1,
            sweep_at: MIN_SWEEP_LEN,
            ops_until_sweep: MIN_SWEEP_LEN,
            earliest_deadline: Timestamp::MAX,
            pool: None,
            pins: HashTable::new(),
        }
    }

    /// The limits this table enforces.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Grants a lease on `name` to `owner` until `now + ttl`, if the name is free.
    ///
    /// Returns `Ok(Some(lease))` when granted, with a fencing token larger than any granted
    /// before; `Ok(None)` when the name is held by a live lease (by anyone, the same owner
    /// included: locks are not reentrant).
    ///
    /// # Errors
    /// [`LockError::InvalidName`], [`LockError::ReservedName`], [`LockError::InvalidOwner`],
    /// [`LockError::InvalidTtl`] for bad input, checked in that order before anything changes;
    /// [`LockError::CapacityExceeded`] when `name` is free but [`Config::max_locks`] live
    /// leases exist already.
    pub fn try_lock(
        &mut self,
        name: &str,
        owner: &str,
        ttl: Duration,
        now: Timestamp,
    ) -> Result<Option<LeaseInfo>, LockError> {
        check_request(name, owner, ttl, &self.config)?;
        let hash = self.hash_name(name);
        let source = Joined { name, owner };
        self.grant(hash, source, ttl, now).into_result()
    }

    /// Resets the lease's deadline to `now + ttl` (an absolute reset: it may move the deadline
    /// earlier) and keeps its token. Updates `lease.deadline` on success.
    ///
    /// # Errors
    /// [`LockError::InvalidTtl`] when `ttl` is zero; [`LockError::Expired`] when the lease is
    /// no longer live at `now` (lapsed or released), even if nobody took the name since. A
    /// refused renew changes nothing: a lapsed lease stays lapsed.
    ///
    /// The `Expired` error's `ttl` is zero: the table keeps no ttls (a handle that does fills
    /// it in).
    #[inline]
    pub fn renew(
        &mut self,
        lease: &mut LeaseInfo,
        ttl: Duration,
        now: Timestamp,
    ) -> Result<(), LockError> {
        lease.deadline = self.renew_deadline(lease, lease.deadline, ttl, now)?;
        Ok(())
    }

    /// [`renew`](Self::renew) of the grant `lease` identifies, whose deadline its holder
    /// last knew as `known`: returns the new deadline instead of writing it into `lease`.
    #[inline]
    pub(crate) fn renew_deadline(
        &mut self,
        lease: &LeaseInfo,
        known: Timestamp,
        ttl: Duration,
        now: Timestamp,
    ) -> Result<Timestamp, LockError> {
        if let Err(refusal) = check_ttl(ttl) {
            return Err(refusal.into_error(lease.name(), lease.owner(), ttl));
        }
        let now = self.observe(now);
        match self
            .entries
            .find_mut(lease.hash, |e| e.token == lease.token)
        {
            Some(entry) if live(entry.deadline, now) => {
                let deadline = now.saturating_add(ttl);
                entry.deadline = deadline;
                self.earliest_deadline = self.earliest_deadline.min(deadline);
                self.tick(now);
                Ok(deadline)
            }
            _ => Err(LockError::Expired {
                name: lease.name().into(),
                token: lease.token,
                ttl: Duration::ZERO,
                deadline: known,
                now,
            }),
        }
    }

    /// Ends the lease. Returns `true` when it was live and is now freed, `false` when it had
    /// already lapsed or been released. Never touches a newer lease of the same name, whoever
    /// holds it: the grant is identified by its token.
    pub fn release(&mut self, lease: &LeaseInfo, now: Timestamp) -> bool {
        self.release_keeping_text(lease, now).0
    }

    /// `release`, handing back the freed entry's allocated text (a long one), so that the
    /// caller can free it after leaving its critical section.
    #[inline]
    pub(crate) fn release_keeping_text(
        &mut self,
        lease: &LeaseInfo,
        now: Timestamp,
    ) -> (bool, Option<Arc<str>>) {
        let now = self.observe(now);
        match self
            .entries
            .find_entry(lease.hash, |e| e.token == lease.token)
        {
            Ok(entry) => {
                let (entry, _) = entry.remove();
                self.forget_entries(1);
                shrink_if_sparse(&mut self.entries, |e| e.hash);
                self.tick(now);
                (live(entry.deadline, now), entry.text.into_shared())
            }
            Err(_) => {
                self.tick(now);
                (false, None)
            }
        }
    }

    /// Ends the lease like [`release`](Self::release), but keeps its slot, lapsed, so that a
    /// hand-off to a waiter reuses it in place (the entry is neither counted out nor back in
    /// against `max_locks`, so no other grant can take its room in between).
    #[inline]
    pub(crate) fn expire(&mut self, lease: &LeaseInfo, now: Timestamp) -> bool {
        let now = self.observe(now);
        match self
            .entries
            .find_mut(lease.hash, |e| e.token == lease.token)
        {
            Some(slot) if live(slot.deadline, now) => {
                // Lapsed at every reading (`now` itself would not do at `Timestamp::MAX`).
                slot.deadline = LAPSED;
                self.earliest_deadline = LAPSED;
                true
            }
            _ => false,
        }
    }

    /// Whether the lease is still live at `now`.
    #[inline]
    pub fn is_held(&mut self, lease: &LeaseInfo, now: Timestamp) -> bool {
        let held = self.live_deadline_of(lease, now).is_some();
        self.tick(self.latest);
        held
    }

    /// The deadline of `lease` if it is still live at `now`.
    #[inline]
    pub(crate) fn live_deadline_of(
        &mut self,
        lease: &LeaseInfo,
        now: Timestamp,
    ) -> Option<Timestamp> {
        let now = self.observe(now);
        self.entries
            .find(lease.hash, |e| e.token == lease.token)
            .map(|e| e.deadline)
            .filter(|&deadline| live(deadline, now))
    }

    /// Every live lease, appended to `out`.
    pub(crate) fn live_leases_into(
        &mut self,
        now: Timestamp,
        out: &mut alloc::vec::Vec<LeaseInfo>,
    ) {
        let now = self.observe(now);
        out.extend(
            self.entries
                .iter()
                .filter(|e| live(e.deadline, now))
                .map(|e| {
                    let name_len = e.text.name_len();
                    LeaseInfo::from_text(e.text.clone(), name_len, e.hash, e.token, e.deadline)
                }),
        );
    }

    /// The live lease on `name`, or `None` when the name is free, its lease lapsed, or the
    /// name is not a valid lock name.
    pub fn holder(&mut self, name: &str, now: Timestamp) -> Option<LeaseInfo> {
        name_refusal(name, &self.config).ok()?;
        let hash = self.hash_name(name);
        self.holder_checked(hash, name, now)
    }

    #[inline]
    pub(crate) fn holder_checked(
        &mut self,
        hash: u64,
        name: &str,
        now: Timestamp,
    ) -> Option<LeaseInfo> {
        let now = self.observe(now);
        let holder = (self
            .entries
            .find(hash, |e| e.hash == hash && e.text.has_name(name)))
        .filter(|e| live(e.deadline, now))
        .map(|e| LeaseInfo::from_text(e.text.clone(), name.len(), hash, e.token, e.deadline));
        self.tick(now);
        holder
    }

    /// Reclaims every lapsed entry now and returns how many there were. Never needed for
    /// correctness (lapsed leases are free whether reclaimed or not); the table also sweeps
    /// by itself, amortised, as it grows.
    #[inline(never)]
    pub fn sweep(&mut self, now: Timestamp) -> usize {
        let now = self.observe(now);
        let before = self.entries.len();
        if now >= self.earliest_deadline {
            let mut earliest = Timestamp::MAX;
            let pins = &self.pins;
            self.entries.retain(|e| {
                if live(e.deadline, now) {
                    earliest = earliest.min(e.deadline);
                    return true;
                }
                // Lapsed: kept only if a waiter is to be handed it.
                !pins.is_empty() && pins.find(e.hash, |p| p.0 == e.hash).is_some()
            });
            self.earliest_deadline = earliest;
        }
        let len = self.entries.len();
        self.forget_entries(before - len);
        self.sweep_at = MIN_SWEEP_LEN.max(len.saturating_mul(2));
        self.ops_until_sweep = MIN_SWEEP_LEN.max(len / 8);
        shrink_if_sparse(&mut self.entries, |e| e.hash);
        before - len
    }

    /// How many entries the table stores: every live lease plus lapsed ones not yet reclaimed.
    pub fn entries(&self) -> usize {
        self.entries.len()
    }

    /// The latest `now` the table has seen; earlier readings are clamped to it.
    #[inline]
    pub fn latest_now(&self) -> Timestamp {
        self.latest
    }

    /// The hash of `name` in this table.
    pub(crate) fn hash_name(&self, name: &str) -> u64 {
        self.hasher.hash_one(name)
    }

    /// The deadline of the live lease on `name`, if there is one.
    pub(crate) fn live_deadline(&self, hash: u64, name: &str, now: Timestamp) -> Option<Timestamp> {
        self.entries
            .find(hash, |e| e.hash == hash && e.text.has_name(name))
            .map(|e| e.deadline)
            .filter(|&deadline| live(deadline, now))
    }

    /// Clamps `now` to the latest reading seen, and remembers it.
    #[inline]
    pub(crate) fn observe(&mut self, now: Timestamp) -> Timestamp {
        self.latest = self.clamp(now);
        self.latest
    }

    /// Clamps `now` to the latest reading seen, without remembering it.
    #[inline]
    pub(crate) fn clamp(&self, now: Timestamp) -> Timestamp {
        now.max(self.latest)
    }
}

impl Default for LockTable {
    fn default() -> Self {
        Self::new(Config::default())
    }
}

impl fmt::Debug for LockTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockTable")
            .field("entries", &self.entries.len())
            .field("latest_now", &self.latest)
            .field("next_token", &self.next_token)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
