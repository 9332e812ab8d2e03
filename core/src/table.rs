//! [`LockTable`]: the lock contract as a pure, deterministic state machine.

use alloc::sync::Arc;
use core::fmt;
use core::hash::BuildHasher;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use core::time::Duration;

use hashbrown::{DefaultHashBuilder, HashTable};

use crate::config::Config;
use crate::error::LockError;
use crate::lease::{LeaseInfo, Text};
use crate::padded::CachePadded;
use crate::time::{Timestamp, live};
use crate::validate::{check_request, check_ttl, name_refusal};

/// The deadline of a slot ended early (kept for a waiter): lapsed at every reading.
const LAPSED: Timestamp = Timestamp::ZERO;

/// The table never sweeps below this many entries: sweeping a tiny table saves nothing.
const MIN_SWEEP_LEN: usize = 16;

/// One entry of the table: 56 bytes, its `name\0owner` text included when that is short
/// (up to 30 bytes), and the name's hash, so that growing, shrinking and sweeping the table
/// never hash a name again.
struct Slot {
    text: Text,
    hash: u64,
    token: u64,
    deadline: Timestamp,
}

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
            ops_until_sweep: MIN_SWEEP_LEN,
            earliest_deadline: Timestamp::MAX,
            pool: None,
            pins: HashTable::new(),
        }
    }

    /// Keeps the slot of the name with this hash through sweeps, lapsed or not, until as
    /// many [`unpin`](Self::unpin)s: a waiter is to be handed it (a queue waits for it, or a
    /// grant made to a waiter is not yet collected and may lapse first), and a lapsed slot
    /// that a sweep removed would have to win its room back against newcomers.
    pub(crate) fn pin(&mut self, hash: u64) {
        match self.pins.find_mut(hash, |p| p.0 == hash) {
            Some(pin) => pin.1 += 1,
            None => {
                self.pins.insert_unique(hash, (hash, 1), |p| p.0);
            }
        }
    }

    /// Whether the slot of the name with this hash is pinned (kept for a waiter).
    #[inline]
    pub(crate) fn is_pinned(&self, hash: u64) -> bool {
        !self.pins.is_empty() && self.pins.find(hash, |p| p.0 == hash).is_some()
    }

    /// Undoes one [`pin`](Self::pin). The slot may be lapsed: the next sweep may take it.
    pub(crate) fn unpin(&mut self, hash: u64) {
        if let Ok(mut pin) = self.pins.find_entry(hash, |p| p.0 == hash) {
            pin.get_mut().1 = pin.get().1.saturating_sub(1);
            if pin.get().1 == 0 {
                pin.remove();
                // Its slot may be lapsed; let the next capacity check sweep it.
                self.earliest_deadline = self.earliest_deadline.min(self.latest);
                shrink_if_sparse(&mut self.pins, |p| p.0);
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
    #[inline]
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
        let source = Joined { name, owner };
        self.grant(hash, source, ttl, now).into_result()
    }

    /// Grants the lease described by `source` (its name and owner, checked already) if the
    /// name is free; `hash` is the name's hash in this table. A refused source is handed
    /// back, so that a waiting request keeps its text. The lookup and the busy answer are
    /// inlined into the caller; the grant itself is not.
    #[inline]
    pub(crate) fn grant<S: LeaseSource>(
        &mut self,
        hash: u64,
        source: S,
        ttl: Duration,
        now: Timestamp,
    ) -> Grant<S> {
        // Clamped, but remembered only once the request passed its checks: a refused request
        // changes nothing, not even the table's notion of now.
        let now = self.clamp(now);
        let name = source.name();
        let found = self
            .entries
            .find_bucket_index(hash, |e| e.hash == hash && e.text.has_name(name));
        if let Some(index) = found {
            if (self.entries.get_bucket(index)).is_some_and(|e| live(e.deadline, now)) {
                self.latest = now;
                self.tick(now);
                return Grant::Busy(source);
            }
        }
        self.grant_free(hash, source, ttl, now, found)
    }

    /// `grant` of a name that is free at `now`: reuses its lapsed slot (at bucket `found`)
    /// or inserts a new one.
    #[inline(never)]
    fn grant_free<S: LeaseSource>(
        &mut self,
        hash: u64,
        source: S,
        ttl: Duration,
        now: Timestamp,
        found: Option<usize>,
    ) -> Grant<S> {
        self.latest = now;
        // Never lapsed on grant: `ttl` is not zero, and a deadline that saturates at `MAX`
        // never lapses.
        let deadline = now.saturating_add(ttl);
        match found.and_then(|index| self.entries.get_bucket_mut(index)) {
            // The previous lease lapsed: reuse its slot.
            Some(slot) => {
                let token = take_token(&self.pool, &mut self.next_token);
                let name_len = source.name().len();
                let text = source.into_text();
                slot.token = token;
                slot.deadline = deadline;
                // The old text goes (inline: nothing to free; shared: perhaps still a handle's).
                let lease = LeaseInfo::from_text(text.clone(), name_len, hash, token, deadline);
                slot.text = text;
                self.earliest_deadline = self.earliest_deadline.min(deadline);
                self.tick(now);
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
        let lease = LeaseInfo::from_text(text.clone(), name_len, hash, token, deadline);
        let slot = Slot {
            text,
            hash,
            token,
            deadline,
        };
        self.entries.insert_unique(hash, slot, |e| e.hash);
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

    /// Counts one operation towards the next amortised sweep, and sweeps when it is due and
    /// a lease may have lapsed: a sweep of `n` entries every `n / 8` operations at most, so
    /// O(1) amortised, and lapsed entries go even when no new name is inserted. When due, it
    /// also gives back room beyond twice what the entries need.
    #[inline]
    fn tick(&mut self, now: Timestamp) {
        match self.ops_until_sweep.checked_sub(1) {
            Some(left) if left > 0 => self.ops_until_sweep = left,
            _ => {
                self.ops_until_sweep = MIN_SWEEP_LEN.max(self.entries.len() / 8);
                if now >= self.earliest_deadline {
                    self.sweep(now);
                }
                // Between the shrinks of removals (at 4x), a tighter one on this schedule:
                // once every len / 8 operations at most, so still O(1) amortised, and a table
                // that drained keeps at most about twice the room its entries need.
                if self.entries.capacity() > 2 * self.entries.len().max(MIN_SWEEP_LEN) {
                    shrink(&mut self.entries, |e| e.hash);
                }
            }
        }
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

/// Gives back the room of a hash table that is mostly empty: when its capacity is over four
/// times its length (and over a small floor), down to its length. Amortised O(1): a table
/// shrinks only after losing most of its entries since it last grew or shrank.
#[inline]
pub(crate) fn shrink_if_sparse<T>(table: &mut HashTable<T>, hash: impl Fn(&T) -> u64) {
    if table.capacity() > 4 * table.len().max(MIN_SWEEP_LEN) {
        shrink(table, hash);
    }
}

#[cold]
#[inline(never)]
fn shrink<T>(table: &mut HashTable<T>, hash: impl Fn(&T) -> u64) {
    table.shrink_to(table.len(), hash);
}

/// The fencing token of the next grant: from the registry's shared counter, or the table's
/// own. Both start at 1. (At one grant per nanosecond, a `u64` lasts 584 years.)
#[inline]
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
    /// The lease's `name\0owner` text, built or handed over only when granted.
    fn into_text(self) -> Text;
}

/// A checked name and owner borrowed from the caller: the text is built only if granted.
pub(crate) struct Joined<'a> {
    pub(crate) name: &'a str,
    pub(crate) owner: &'a str,
}

impl LeaseSource for Joined<'_> {
    #[inline]
    fn name(&self) -> &str {
        self.name
    }

    #[inline]
    fn into_text(self) -> Text {
        Text::join(self.name, self.owner)
    }
}

/// A lease text made in advance (by a waiting request), the name being its first
/// `name_len` bytes.
#[derive(Debug)]
pub(crate) struct OwnedText {
    pub(crate) text: Text,
    pub(crate) name_len: usize,
}

impl OwnedText {
    /// No text: what a waiter keeps while the table holds its text.
    pub(crate) fn empty() -> Self {
        OwnedText {
            text: Text::empty(),
            name_len: 0,
        }
    }

    /// The owner part of the text.
    pub(crate) fn owner(&self) -> &str {
        self.text
            .as_str()
            .get(self.name_len + 1..)
            .unwrap_or_default()
    }
}

impl LeaseSource for OwnedText {
    fn name(&self) -> &str {
        self.text.as_str().get(..self.name_len).unwrap_or_default()
    }

    fn into_text(self) -> Text {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_56_bytes_with_its_short_text_inline() {
        // 57 bytes a bucket with its control byte: what keeps the heap per live lease
        // within budget at hashbrown's lowest load factor after a resize.
        assert_eq!(core::mem::size_of::<Slot>(), 56);
    }
}
