//! [`LockTable`]: the lock contract as a pure, deterministic state machine.

use alloc::boxed::Box;
use alloc::sync::Arc;
use core::fmt;
use core::hash::BuildHasher;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use core::time::Duration;

use hashbrown::{DefaultHashBuilder, HashTable};

use crate::config::Config;
use crate::error::LockError;
use crate::lease::{LeaseInfo, lease_text, text_has_name, text_name};
use crate::padded::CachePadded;
use crate::time::Timestamp;
use crate::validate::{check_request, check_ttl, name_refusal};

/// The table never sweeps below this many entries: sweeping a tiny table saves nothing.
const MIN_SWEEP_LEN: usize = 16;

/// One entry of the table: 32 bytes plus its `name\0owner` text.
struct Slot {
    text: Box<str>,
    token: u64,
    deadline: Timestamp,
}

impl Slot {
    /// The hash of the slot's name: what the table rehashes by when it grows or shrinks,
    /// and what a sweep looks up among the pins.
    fn hash(&self, hasher: &DefaultHashBuilder) -> u64 {
        hasher.hash_one(text_name(&self.text))
    }
}

/// The named-lock contract as a sans-IO state machine: no clock, no lock, no background task.
///
/// Every method that depends on time takes `now`. The table remembers the latest `now` it
/// was given and clamps earlier readings to it, so its notion of time never moves
/// backwards. A lease is live while `now < deadline`; at the deadline it lapses silently
/// and the name is free again. Lapsed entries are reclaimed lazily: in place when their
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
    /// No entry's deadline is earlier than this (exact after a sweep, a lower bound otherwise).
    earliest_deadline: Timestamp,
    /// The counters shared with the other shards of a registry, if this table is one.
    pool: Option<Arc<Pool>>,
    /// Hashes of names whose slots a sweep must keep even when lapsed, with how many pins
    /// each has: the names a registry has waiters for, whose slots go to those waiters.
    pins: HashTable<(u64, usize)>,
}

/// What the shards of one registry share: the fencing-token counter (tokens strictly
/// increase across the whole registry) and, when [`Config::max_locks`] is set, the count of
/// entries held by all shards together.
#[derive(Default)]
pub(crate) struct Pool {
    next_token: CachePadded<AtomicU64>,
    entries: CachePadded<AtomicUsize>,
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
            earliest_deadline: Timestamp::MAX,
            pool: None,
            pins: HashTable::new(),
        }
    }

    /// Keeps the slot of the name with this hash through sweeps, lapsed or not, until as
    /// many [`unpin`](Self::unpin)s: a waiter is to be handed it, and a lapsed slot that a
    /// sweep removed would have to win its room back against newcomers.
    pub(crate) fn pin(&mut self, hash: u64) {
        match self.pins.find_mut(hash, |p| p.0 == hash) {
            Some(pin) => pin.1 += 1,
            None => {
                self.pins.insert_unique(hash, (hash, 1), |p| p.0);
            }
        }
    }

    /// Undoes one [`pin`](Self::pin). The slot may be lapsed: the next sweep may take it.
    pub(crate) fn unpin(&mut self, hash: u64) {
        if let Ok(mut pin) = self.pins.find_entry(hash, |p| p.0 == hash) {
            pin.get_mut().1 -= 1;
            if pin.get().1 == 0 {
                pin.remove();
                // Its slot may be lapsed; let the next capacity check sweep it.
                self.earliest_deadline = self.earliest_deadline.min(self.latest);
            }
        }
    }

    /// A table that is one shard of a registry: tokens and the `max_locks` count come from
    /// `pool`, shared with the other shards; names are hashed with `hasher`.
    pub(crate) fn shard(config: Config, hasher: DefaultHashBuilder, pool: Arc<Pool>) -> Self {
        LockTable {
            hasher,
            pool: Some(pool),
            ..Self::new(config)
        }
    }

    /// Counts one more entry against [`Config::max_locks`]; `false` when there is no room.
    fn reserve_entry(&self) -> bool {
        match (self.config.max_locks(), &self.pool) {
            (None, _) => true,
            (Some(max), None) => self.entries.len() < max,
            (Some(max), Some(pool)) => pool
                .entries
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                    (n < max).then_some(n + 1)
                })
                .is_ok(),
        }
    }

    /// Gives back `count` removed entries to the count shared with the other shards.
    fn forget_entries(&self, count: usize) {
        if let (Some(_), Some(pool)) = (self.config.max_locks(), &self.pool) {
            if count > 0 {
                pool.entries.fetch_sub(count, Ordering::AcqRel);
            }
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
        let source = Joined {
            name,
            owner,
            name_checked: true,
        };
        self.grant(hash, source, ttl, now).into_result()
    }

    /// Grants the lease described by `source` (its name and owner, checked already) if the
    /// name is free; `hash` is the name's hash in this table. A refused source is handed
    /// back, so that a waiting request keeps its text.
    pub(crate) fn grant<S: LeaseSource>(
        &mut self,
        hash: u64,
        source: S,
        ttl: Duration,
        now: Timestamp,
    ) -> Grant<S> {
        let now = self.observe(now);
        let found = self
            .entries
            .find_mut(hash, |e| text_has_name(&e.text, source.name()));
        if found.as_ref().is_some_and(|e| e.deadline > now) {
            return Grant::Busy(source);
        }
        if let Err(err) = source.check_before_grant(&self.config) {
            return Grant::Refused(err, source);
        }
        let deadline = now.saturating_add(ttl);
        match found {
            // The previous lease lapsed: reuse its slot.
            Some(slot) => {
                let token = take_token(&self.pool, &mut self.next_token);
                let name_len = source.name().len();
                *slot = Slot {
                    text: source.into_text(),
                    token,
                    deadline,
                };
                let lease = LeaseInfo::from_text(&slot.text, name_len, hash, token, deadline);
                self.earliest_deadline = self.earliest_deadline.min(deadline);
                Grant::Granted(lease)
            }
            None => {
                if self.entries.len() >= self.sweep_at {
                    self.sweep(now);
                }
                if !self.reserve_entry() {
                    return self.grant_when_full(hash, source, deadline, now);
                }
                Grant::Granted(self.insert_new(hash, source, deadline))
            }
        }
    }

    /// Inserts the lease of a name known to be absent, its entry counted already.
    fn insert_new<S: LeaseSource>(
        &mut self,
        hash: u64,
        source: S,
        deadline: Timestamp,
    ) -> LeaseInfo {
        let token = take_token(&self.pool, &mut self.next_token);
        let name_len = source.name().len();
        let text = source.into_text();
        let lease = LeaseInfo::from_text(&text, name_len, hash, token, deadline);
        let hasher = &self.hasher;
        let slot = Slot {
            text,
            token,
            deadline,
        };
        self.entries.insert_unique(hash, slot, |e| e.hash(hasher));
        self.earliest_deadline = self.earliest_deadline.min(deadline);
        lease
    }

    /// `grant` of a new name while [`Config::max_locks`] entries exist: sweep if a lease may
    /// have lapsed since the last sweep, then insert, or refuse if the table is still full.
    #[cold]
    fn grant_when_full<S: LeaseSource>(
        &mut self,
        hash: u64,
        source: S,
        deadline: Timestamp,
        now: Timestamp,
    ) -> Grant<S> {
        if now >= self.earliest_deadline {
            self.sweep(now);
        }
        if !self.reserve_entry() {
            let err = LockError::CapacityExceeded {
                name: source.name().into(),
                max: self.config.max_locks().unwrap_or(usize::MAX),
            };
            return Grant::Refused(err, source);
        }
        Grant::Granted(self.insert_new(hash, source, deadline))
    }

    /// Resets the lease's deadline to `now + ttl` (an absolute reset: it may move the deadline
    /// earlier) and keeps its token. Updates `lease.deadline` on success.
    ///
    /// # Errors
    /// [`LockError::InvalidTtl`] when `ttl` is zero; [`LockError::Expired`] when the lease is
    /// no longer live at `now` (lapsed or released), even if nobody took the name since. A
    /// refused renew changes nothing: a lapsed lease stays lapsed.
    pub fn renew(
        &mut self,
        lease: &mut LeaseInfo,
        ttl: Duration,
        now: Timestamp,
    ) -> Result<(), LockError> {
        if let Err(refusal) = check_ttl(ttl) {
            return Err(refusal.into_error(lease.name(), lease.owner(), ttl));
        }
        let now = self.observe(now);
        match self
            .entries
            .find_mut(lease.hash, |e| e.token == lease.token)
        {
            Some(entry) if entry.deadline > now => {
                let deadline = now.saturating_add(ttl);
                entry.deadline = deadline;
                lease.deadline = deadline;
                self.earliest_deadline = self.earliest_deadline.min(deadline);
                Ok(())
            }
            _ => Err(LockError::Expired {
                name: lease.name().into(),
                token: lease.token,
                deadline: lease.deadline,
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

    /// `release`, handing back the freed entry's text so that the caller can free it after
    /// leaving its critical section.
    pub(crate) fn release_keeping_text(
        &mut self,
        lease: &LeaseInfo,
        now: Timestamp,
    ) -> (bool, Option<Box<str>>) {
        let now = self.observe(now);
        match self
            .entries
            .find_entry(lease.hash, |e| e.token == lease.token)
        {
            Ok(entry) => {
                let (entry, _) = entry.remove();
                self.forget_entries(1);
                (entry.deadline > now, Some(entry.text))
            }
            Err(_) => (false, None),
        }
    }

    /// Ends the lease like [`release`](Self::release), but keeps its slot, lapsed, so that a
    /// hand-off to a waiter reuses it in place (the entry is neither counted out nor back in
    /// against `max_locks`, so no other grant can take its room in between).
    pub(crate) fn expire(&mut self, lease: &LeaseInfo, now: Timestamp) -> bool {
        let now = self.observe(now);
        match self
            .entries
            .find_mut(lease.hash, |e| e.token == lease.token)
        {
            Some(slot) if slot.deadline > now => {
                slot.deadline = now;
                self.earliest_deadline = self.earliest_deadline.min(now);
                true
            }
            _ => false,
        }
    }

    /// Whether the lease is still live at `now`.
    pub fn is_held(&mut self, lease: &LeaseInfo, now: Timestamp) -> bool {
        let now = self.observe(now);
        self.entries
            .find(lease.hash, |e| e.token == lease.token)
            .is_some_and(|e| e.deadline > now)
    }

    /// The deadline of `lease` if it is still live at `now`.
    pub(crate) fn live_deadline_of(
        &mut self,
        lease: &LeaseInfo,
        now: Timestamp,
    ) -> Option<Timestamp> {
        let now = self.observe(now);
        self.entries
            .find(lease.hash, |e| e.token == lease.token)
            .map(|e| e.deadline)
            .filter(|&deadline| deadline > now)
    }

    /// Every live lease, appended to `out`.
    pub(crate) fn live_leases_into(
        &mut self,
        now: Timestamp,
        out: &mut alloc::vec::Vec<LeaseInfo>,
    ) {
        let now = self.observe(now);
        let hasher = &self.hasher;
        out.extend(self.entries.iter().filter(|e| e.deadline > now).map(|e| {
            let name_len = text_name(&e.text).len();
            LeaseInfo::from_text(&e.text, name_len, e.hash(hasher), e.token, e.deadline)
        }));
    }

    /// The live lease on `name`, or `None` when the name is free, its lease lapsed, or the
    /// name is not a valid lock name.
    pub fn holder(&mut self, name: &str, now: Timestamp) -> Option<LeaseInfo> {
        name_refusal(name, &self.config).ok()?;
        let hash = self.hash_name(name);
        self.holder_checked(hash, name, now)
    }

    pub(crate) fn holder_checked(
        &mut self,
        hash: u64,
        name: &str,
        now: Timestamp,
    ) -> Option<LeaseInfo> {
        let now = self.observe(now);
        let entry = self.entries.find(hash, |e| text_has_name(&e.text, name))?;
        (entry.deadline > now).then(|| {
            LeaseInfo::from_text(&entry.text, name.len(), hash, entry.token, entry.deadline)
        })
    }

    /// Reclaims every lapsed entry now and returns how many there were. Never needed for
    /// correctness (lapsed leases are free whether reclaimed or not); the table also sweeps
    /// by itself, amortised, as it grows.
    pub fn sweep(&mut self, now: Timestamp) -> usize {
        let now = self.observe(now);
        let before = self.entries.len();
        if now >= self.earliest_deadline {
            let mut earliest = Timestamp::MAX;
            let (pins, hasher) = (&self.pins, &self.hasher);
            self.entries.retain(|e| {
                if e.deadline > now {
                    earliest = earliest.min(e.deadline);
                    return true;
                }
                // Lapsed: kept only if a waiter is to be handed it.
                !pins.is_empty() && {
                    let hash = e.hash(hasher);
                    pins.find(hash, |p| p.0 == hash).is_some()
                }
            });
            self.earliest_deadline = earliest;
        }
        let len = self.entries.len();
        self.forget_entries(before - len);
        self.sweep_at = MIN_SWEEP_LEN.max(len.saturating_mul(2));
        if self.entries.capacity() > 4 * self.sweep_at {
            let hasher = &self.hasher;
            self.entries.shrink_to(self.sweep_at, |e| e.hash(hasher));
        }
        before - len
    }

    /// How many entries the table stores: every live lease plus lapsed ones not yet reclaimed.
    pub fn entries(&self) -> usize {
        self.entries.len()
    }

    /// The latest `now` the table has seen; earlier readings are clamped to it.
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
            .find(hash, |e| text_has_name(&e.text, name))
            .map(|e| e.deadline)
            .filter(|&deadline| deadline > now)
    }

    /// Clamps `now` to the latest reading seen, and remembers it.
    #[inline]
    pub(crate) fn observe(&mut self, now: Timestamp) -> Timestamp {
        if now > self.latest {
            self.latest = now;
        }
        self.latest
    }
}

/// The fencing token of the next grant: from the registry's shared counter, or the table's
/// own. Both start at 1. (At one grant per nanosecond, a `u64` lasts 584 years.)
fn take_token(pool: &Option<Arc<Pool>>, own: &mut u64) -> u64 {
    match pool {
        Some(pool) => pool.next_token.fetch_add(1, Ordering::AcqRel) + 1,
        None => {
            let token = *own;
            *own = token.saturating_add(1);
            token
        }
    }
}

/// Where a grant's name and owner come from.
pub(crate) trait LeaseSource {
    /// The lock's name.
    fn name(&self) -> &str;
    /// The name checks this source left for the grant: run only when the name is free, just
    /// before anything changes. (A name that matches a live lease needs none: it equals a
    /// name that passed them.)
    fn check_before_grant(&self, _config: &Config) -> Result<(), LockError> {
        Ok(())
    }
    /// The lease's `name\0owner` text, built or handed over only when granted.
    fn into_text(self) -> Box<str>;
}

/// A name and an owner borrowed from the caller: the text is built only if granted.
/// `name_checked` is false when only [`quick_check`](crate::validate::quick_check) ran:
/// then the rest of the name rules run before a grant.
pub(crate) struct Joined<'a> {
    pub(crate) name: &'a str,
    pub(crate) owner: &'a str,
    pub(crate) name_checked: bool,
}

impl LeaseSource for Joined<'_> {
    fn name(&self) -> &str {
        self.name
    }

    fn check_before_grant(&self, config: &Config) -> Result<(), LockError> {
        if self.name_checked {
            return Ok(());
        }
        name_refusal(self.name, config)
            .map_err(|refusal| refusal.into_error(self.name, self.owner, Duration::ZERO))
    }

    fn into_text(self) -> Box<str> {
        lease_text(self.name, self.owner)
    }
}

/// A lease text made in advance (by a waiting request), the name being its first
/// `name_len` bytes.
#[derive(Debug)]
pub(crate) struct OwnedText {
    pub(crate) text: Box<str>,
    pub(crate) name_len: usize,
}

impl LeaseSource for OwnedText {
    fn name(&self) -> &str {
        &self.text[..self.name_len]
    }

    fn into_text(self) -> Box<str> {
        self.text
    }
}

/// What [`LockTable::grant`] did.
pub(crate) enum Grant<S> {
    /// Granted; the table owns the text now.
    Granted(LeaseInfo),
    /// A live lease holds the name; the source is handed back.
    Busy(S),
    /// The name is free but the grant is refused (a full table, or a name that fails the
    /// checks its source left to the grant); the source is handed back.
    Refused(LockError, S),
}

impl<S> Grant<S> {
    /// `try_lock`'s answer: granted, busy (`None`) or the error.
    pub(crate) fn into_result(self) -> Result<Option<LeaseInfo>, LockError> {
        match self {
            Grant::Granted(lease) => Ok(Some(lease)),
            Grant::Busy(_) => Ok(None),
            Grant::Refused(err, _) => Err(err),
        }
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
