//! [`State`]: what a registry guards with its mutex: the lease table and the queues of
//! waiting `acquire` calls, with the hand-off rules that keep waiters first in line.
//!
//! # The queue rules
//! - Waiters on a name are served in arrival order. Whenever an operation finds a name with
//!   waiters and no live lease (after a release, or once the lease lapsed), it grants the
//!   lease to the head waiter on the spot, so nobody can barge ahead of the queue; a name
//!   with waiters is busy for every newcomer.
//! - A waiter handed the lease leaves the queue and keeps the grant until its future is
//!   polled. Should the lease have lapsed by then, the hand-off is lost: the waiter goes back
//!   to the head of its name's queue (or, if its own wait has elapsed, resolves to `None`).
//!   An `acquire` never returns a lapsed lease. Meanwhile the name is free for newcomers
//!   (a lapsed lease is gone, whoever it was handed to).
//! - A name keeps its slot in the table, and with it its room under `max_locks`, while it
//!   has waiters: while its queue exists, and while a grant handed to a waiter is not yet
//!   collected (each pins the slot; see `LockTable::pin`). Sweeps keep a pinned slot even
//!   lapsed, and a release on a pinned name ends the lease in its slot instead of removing
//!   it. So a head waiter is always granted in place, never refused for want of room, even
//!   after a lost hand-off whose room another name asked for in between: the room stays
//!   counted, as `Config::with_max_locks` documents, until the waiter collects its grant,
//!   leaves, or is dropped.
//! - No waiter is forgotten: every queued waiter holds a grant, sleeps until a time at
//!   which its standing can change, or is woken by the event that changes it. A waiter
//!   sleeps until its own wait deadline, and the head waiter until the holder's deadline if
//!   that is earlier (an unbounded wait behind a lease that never lapses sleeps not at all).
//!   The events are all under the mutex: a hand-off (release, `force_release`, a lapse seen
//!   by any call on the name) wakes the waiter handed the lease and the new head, whose
//!   sleep must follow the new holder; a renewal wakes the head, whose holder's deadline
//!   moved; the head leaving wakes the next one. Room freed elsewhere in the registry (in
//!   any shard) is no such event: no waiter ever waits for room.
//! - Waiters live in a map by id; each name's queue is a deque of ids in arrival order. A
//!   waiter that leaves (cancelled, timed out) is removed from the map only: its id stays in
//!   the deque as a tombstone, skipped when it reaches the front, and the deque is compacted
//!   once tombstones outnumber the waiters. Leaving is O(1) amortised.
//! - No user code runs under the mutex: a caller's waker is cloned before the mutex is
//!   taken, and every waker to wake or to drop (a replaced one, a removed waiter's) is moved
//!   into [`Deferred`], woken or dropped after the mutex is released. The state is complete
//!   before any of it runs, so a waker that panics, or calls back into the registry, finds
//!   it consistent. (A woken waiter's stored waker is taken, not cloned: its next poll stores
//!   a new one.)

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::task::Waker;
use core::time::Duration;

use hashbrown::{HashMap, HashTable, hash_table};

use crate::error::LockError;
use crate::lease::{LeaseInfo, Text};
use crate::snapshot::{Snapshot, Waiting};
use crate::table::{Grant, Joined, LeaseSource, LockTable, OwnedText, shrink_if_sparse};
use crate::time::{Timestamp, live};
use crate::wake::wake_all;

/// The table and the wait queues, guarded together by the registry's mutex.
pub(crate) struct State {
    pub(crate) table: LockTable,
    /// The queue of each name that has waiters; a queue is removed when its last waiter
    /// leaves it.
    queues: HashTable<Queue>,
    /// Every `acquire` that waits or holds an uncollected grant, by id.
    waiters: HashMap<u64, Waiter>,
    next_waiter_id: u64,
    /// The wakers of pending [`Lapsed`](crate::Lapsed) and `keep_alive` futures (each with
    /// its id), by the token of the lease they watch: woken when the lease ends by another
    /// path than time (`force_release`).
    watchers: HashMap<u64, Vec<(u64, Waker)>>,
    next_watcher_id: u64,
}

/// The waiters of one name, in arrival order.
struct Queue {
    hash: u64,
    name: Box<str>,
    /// Ids in arrival order; an id whose waiter left (or was granted) is a tombstone.
    ids: VecDeque<u64>,
    /// How many ids of `ids` are queued waiters (the rest are tombstones); never zero.
    queued: usize,
}

impl Queue {
    /// The first queued waiter, dropping the tombstones ahead of it.
    fn head(&mut self, waiters: &HashMap<u64, Waiter>) -> Option<u64> {
        while let Some(&id) = self.ids.front() {
            if is_queued(waiters, id) {
                return Some(id);
            }
            self.ids.pop_front();
        }
        None
    }

    /// Drops the tombstones once they outnumber the waiters, and gives back spare room.
    fn compact(&mut self, waiters: &HashMap<u64, Waiter>) {
        if self.ids.len() > 2 * self.queued + 8 {
            self.ids.retain(|&id| is_queued(waiters, id));
        }
        if self.ids.capacity() > 4 * self.ids.len().max(8) {
            self.ids.shrink_to(self.ids.len());
        }
    }
}

/// Whether `id` is a waiter still in line (not gone, not granted).
fn is_queued(waiters: &HashMap<u64, Waiter>, id: u64) -> bool {
    waiters.get(&id).is_some_and(|w| w.granted.is_none())
}

/// One `acquire` in line: what to grant it, whom to wake, and the grant once made.
struct Waiter {
    /// What it asked for; its text moves to the table on the grant.
    request: Request,
    waker: Option<Waker>,
    granted: Option<LeaseInfo>,
}

/// A lock request that passed validation, ready to be granted or queued.
#[derive(Debug)]
pub(crate) struct Request {
    text: OwnedText,
    hash: u64,
    ttl: Duration,
}

impl Request {
    /// A request for `name`, whose hash in the table is `hash`; the inputs are checked.
    pub(crate) fn new(name: &str, owner: &str, hash: u64, ttl: Duration) -> Self {
        Request {
            text: OwnedText {
                text: Text::join(name, owner),
                name_len: name.len(),
            },
            hash,
            ttl,
        }
    }

    pub(crate) fn name(&self) -> &str {
        self.text.name()
    }

    /// The name's hash in the registry's tables.
    pub(crate) fn hash(&self) -> u64 {
        self.hash
    }

    /// The requested lease duration.
    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }
}

/// How an `acquire` stands after a poll.
pub(crate) enum Standing {
    /// The lease is the waiter's.
    Granted(LeaseInfo),
    /// Refused at once (`wait` was zero and the name is busy).
    Busy,
    /// Refused (for want of room: `max_locks`); the request is handed back.
    Refused(LockError, Request),
    /// Waiting, as waiter `id`; sleep until `until` unless woken first.
    Waiting { id: u64, until: Timestamp },
    /// The wait elapsed first; the waiter has left the queue.
    TimedOut,
}

/// Work kept for after the mutex is released: wakers to wake, wakers to drop (replaced or
/// removed ones: dropping a waker runs user code) and a freed lease text, so that none of it
/// runs inside the critical section. Allocation free unless a waiter is involved.
#[derive(Default)]
pub(crate) struct Deferred {
    wake: Vec<Waker>,
    discard: Vec<Waker>,
    freed: Option<Arc<str>>,
}

impl Deferred {
    fn wake(&mut self, waker: Option<Waker>) {
        self.wake.extend(waker);
    }

    fn discard(&mut self, waker: Option<Waker>) {
        self.discard.extend(waker);
    }

    fn free(&mut self, text: Option<Arc<str>>) {
        // At most one text per operation in practice; a second is simply dropped here.
        if self.freed.is_none() {
            self.freed = text;
        }
    }

    /// Wakes the collected wakers (every one, even if one panics), then drops the discarded
    /// wakers and the freed text. When there is none of that (no waiter was involved, no
    /// long text freed: the common case) it is two compares, inlined into the caller.
    #[inline]
    pub(crate) fn run(self) {
        if self.wake.capacity() == 0 && self.discard.capacity() == 0 && self.freed.is_none() {
            // Nothing to wake and nothing owned: skip the drop glue too.
            core::mem::forget(self);
            return;
        }
        self.run_work();
    }

    #[cold]
    #[inline(never)]
    fn run_work(self) {
        let Deferred {
            wake,
            discard,
            freed,
        } = self;
        // Dropped after the wake-ups, also when a wake-up panics.
        let _later = (freed, discard);
        if !wake.is_empty() {
            wake_all(wake);
        }
    }
}

impl State {
    pub(crate) fn new(table: LockTable) -> Self {
        State {
            table,
            queues: HashTable::new(),
            waiters: HashMap::new(),
            next_waiter_id: 0,
            watchers: HashMap::new(),
            next_watcher_id: 0,
        }
    }

    /// The deadline of `lease` if it is live, with `waker` kept (as watcher `id`, given one
    /// on the first call) to be woken should the lease end early; `Err` with the reading it
    /// was found gone at, and nothing kept, when it is no longer live.
    pub(crate) fn watch(
        &mut self,
        lease: &LeaseInfo,
        id: &mut Option<u64>,
        now: Timestamp,
        waker: Waker,
        later: &mut Deferred,
    ) -> Result<Timestamp, Timestamp> {
        let Some(deadline) = self.table.live_deadline_of(lease, now) else {
            if let Some(id) = id.take() {
                self.unwatch(lease.token, id, later);
            }
            later.discard(Some(waker));
            return Err(self.table.clamp(now));
        };
        let id = *id.get_or_insert_with(|| {
            self.next_watcher_id += 1;
            self.next_watcher_id
        });
        let watchers = self.watchers.entry(lease.token).or_default();
        match watchers.iter_mut().find(|(other, _)| *other == id) {
            Some((_, kept)) => later.discard(Some(core::mem::replace(kept, waker))),
            None => watchers.push((id, waker)),
        }
        Ok(deadline)
    }

    /// Forgets watcher `id` of the lease with this token, if it is kept.
    pub(crate) fn unwatch(&mut self, token: u64, id: u64, later: &mut Deferred) {
        if let Some(watchers) = self.watchers.get_mut(&token) {
            if let Some(at) = watchers.iter().position(|(other, _)| *other == id) {
                later.discard(Some(watchers.swap_remove(at).1));
            }
            if watchers.is_empty() {
                self.watchers.remove(&token);
            }
        }
        self.shrink_watchers();
    }

    /// Gives back the watchers' room once most of it is empty.
    fn shrink_watchers(&mut self) {
        if self.watchers.capacity() > 4 * self.watchers.len().max(8) {
            self.watchers.shrink_to(self.watchers.len());
        }
    }

    /// How many `acquire` calls are queued (or hold a grant not yet collected).
    pub(crate) fn waiters(&self) -> usize {
        self.waiters.len()
    }

    /// `try_lock` of checked inputs, `hash` being `name`'s hash, never ahead of the queue:
    /// a name with waiters is busy for everyone else. A grant is written to `granted` (an
    /// out-parameter, so that the busy path moves nothing large around).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(crate) fn try_lock(
        &mut self,
        hash: u64,
        name: &str,
        owner: &str,
        ttl: Duration,
        now: Timestamp,
        later: &mut Deferred,
        granted: &mut Option<LeaseInfo>,
    ) -> Result<(), LockError> {
        if !self.waiters.is_empty() && self.settle(hash, name, now, later) {
            return Ok(());
        }
        let source = Joined { name, owner };
        match self.table.grant(hash, source, ttl, now) {
            Grant::Granted(lease) => *granted = Some(lease),
            Grant::Busy(_) => {}
            Grant::Refused(err, _) => return Err(err),
        }
        Ok(())
    }

    /// The live lease on the checked `name`, after handing a lapsed one to a waiter.
    #[inline]
    pub(crate) fn holder(
        &mut self,
        hash: u64,
        name: &str,
        now: Timestamp,
        later: &mut Deferred,
    ) -> Option<LeaseInfo> {
        if !self.waiters.is_empty() {
            self.settle(hash, name, now, later);
        }
        self.table.holder_checked(hash, name, now)
    }

    /// Renews the grant `lease` identifies (its holder last knew its deadline as `known`) to
    /// `now + ttl`; returns the new deadline.
    #[inline]
    pub(crate) fn renew(
        &mut self,
        lease: &LeaseInfo,
        known: Timestamp,
        ttl: Duration,
        now: Timestamp,
        later: &mut Deferred,
    ) -> Result<Timestamp, LockError> {
        let deadline = self.table.renew_deadline(lease, known, ttl, now)?;
        if !self.waiters.is_empty() {
            self.wake_head(lease, later);
        }
        Ok(deadline)
    }

    /// After a renew of `lease`: the head waiter of its name sleeps until the holder's
    /// deadline, which moved, so it must look again.
    fn wake_head(&mut self, lease: &LeaseInfo, later: &mut Deferred) {
        let name = lease.name();
        if let Some(queue) = self.queues.find_mut(lease.hash, |q| *q.name == *name) {
            if let Some(head) = queue.head(&self.waiters) {
                later.wake(self.waiters.get_mut(&head).and_then(|w| w.waker.take()));
            }
        }
    }

    #[inline]
    pub(crate) fn release(
        &mut self,
        lease: &LeaseInfo,
        now: Timestamp,
        later: &mut Deferred,
    ) -> bool {
        if !self.waiters.is_empty() && self.table.is_pinned(lease.hash) {
            return self.release_to_waiter(lease, now, later);
        }
        let (was_live, text) = self.table.release_keeping_text(lease, now);
        if text.is_some() {
            later.free(text);
        }
        was_live
    }

    /// `release` of a name whose slot is pinned (it has waiters, queued or handed the lease
    /// and yet to collect it): ends the lease in its slot, keeping the slot and its room for
    /// them, and hands it to the head waiter if one is queued.
    fn release_to_waiter(
        &mut self,
        lease: &LeaseInfo,
        now: Timestamp,
        later: &mut Deferred,
    ) -> bool {
        let was_live = self.table.expire(lease, now);
        self.settle(lease.hash, lease.name(), now, later);
        was_live
    }

    /// Ends the live lease on the checked `name`, whoever holds it, handing it to the head
    /// waiter if any; returns the lease it ended.
    pub(crate) fn force_release(
        &mut self,
        hash: u64,
        name: &str,
        now: Timestamp,
        later: &mut Deferred,
    ) -> Option<LeaseInfo> {
        let lease = self.table.holder_checked(hash, name, now)?;
        self.release(&lease, now, later);
        // Its holder may be waiting for it to lapse: that happened now, not at the deadline.
        if let Some(watchers) = self.watchers.remove(&lease.token) {
            for (_, waker) in watchers {
                later.wake(Some(waker));
            }
            self.shrink_watchers();
        }
        Some(lease)
    }

    /// Appends the live leases and the queued waiters (in queue order) to `snapshot`.
    pub(crate) fn snapshot_into(&mut self, now: Timestamp, snapshot: &mut Snapshot) {
        self.table.live_leases_into(now, &mut snapshot.held);
        for queue in self.queues.iter() {
            for id in &queue.ids {
                if let Some(waiter) = self.waiters.get(id).filter(|w| w.granted.is_none()) {
                    snapshot.waiting.push(Waiting {
                        name: queue.name.as_ref().into(),
                        owner: waiter.request.text.owner().into(),
                    });
                }
            }
        }
    }

    /// The first poll of an `acquire`: grant at once if the name is free and nobody is
    /// queued, else answer `Busy` (`wait` zero) or join the queue's tail.
    pub(crate) fn start(
        &mut self,
        request: Request,
        wait: Duration,
        now: Timestamp,
        later: &mut Deferred,
    ) -> Standing {
        let now = self.table.observe(now);
        let Request { text, hash, ttl } = request;
        let queued_ahead = !self.waiters.is_empty() && self.settle(hash, text.name(), now, later);
        let text = if queued_ahead {
            text
        } else {
            match self.table.grant(hash, text, ttl, now) {
                Grant::Granted(lease) => return Standing::Granted(lease),
                Grant::Busy(text) => text,
                Grant::Refused(err, text) => {
                    return Standing::Refused(err, Request { text, hash, ttl });
                }
            }
        };
        if wait.is_zero() {
            return Standing::Busy;
        }
        let id = self.next_waiter_id;
        self.next_waiter_id += 1;
        let waiter = Waiter {
            request: Request { text, hash, ttl },
            waker: None,
            granted: None,
        };
        self.waiters.insert(id, waiter);
        self.enqueue(id, false);
        Standing::Waiting {
            id,
            until: now.saturating_add(wait),
        }
    }

    /// Puts waiter `id` in its name's queue, at the tail (or at the head), making the queue
    /// (and pinning the name's slot through sweeps) if it is the first.
    fn enqueue(&mut self, id: u64, at_head: bool) {
        let Some(waiter) = self.waiters.get(&id) else {
            return;
        };
        let (hash, name) = (waiter.request.hash, waiter.request.name());
        match self.queues.entry(hash, |q| *q.name == *name, |q| q.hash) {
            hash_table::Entry::Occupied(mut queue) => {
                let queue = queue.get_mut();
                if at_head {
                    queue.ids.push_front(id);
                } else {
                    queue.ids.push_back(id);
                }
                queue.queued += 1;
            }
            hash_table::Entry::Vacant(vacant) => {
                vacant.insert(Queue {
                    hash,
                    name: name.into(),
                    ids: VecDeque::from([id]),
                    queued: 1,
                });
                // The name's slot stays through sweeps until its waiters are served.
                self.table.pin(hash);
            }
        }
    }

    /// A later poll of waiter `id`, whose wait ends at `wait_deadline`, with the poller's
    /// waker (cloned before the mutex was taken): report a grant if it is still live, hand
    /// over a lapsed lease if the waiter is first in line, give up at the deadline, or say
    /// how long to sleep (the head waiter until the holder's deadline at the latest).
    pub(crate) fn poll_waiter(
        &mut self,
        id: u64,
        wait_deadline: Timestamp,
        now: Timestamp,
        waker: Waker,
        later: &mut Deferred,
    ) -> Standing {
        let now = self.table.observe(now);
        let granted = match self.waiters.get_mut(&id) {
            Some(waiter) => waiter.granted.take(),
            None => {
                later.discard(Some(waker));
                return Standing::TimedOut;
            }
        };
        if let Some(lease) = granted {
            // Live in the table, not only by its own deadline: it may have been
            // force-released (and even handed on) before this poll came to collect it.
            if self.table.live_deadline_of(&lease, now).is_some() {
                later.discard(Some(waker));
                return self.collect(id, lease, later);
            }
            // Handed the lease, but it lapsed before this poll came to collect it (and the
            // name may be someone else's by now): the hand-off is lost.
            if !live(wait_deadline, now) {
                later.discard(Some(waker));
                remove_waiter(&mut self.waiters, id, later);
                self.table.unpin(lease.hash);
                // Frees its slot, or keeps it for, or hands it to, the other waiters.
                self.release(&lease, now, later);
                return Standing::TimedOut;
            }
            // It was first in line: back to the head of the queue, with its text again. Its
            // slot was pinned all along, so it is still there (lapsed, or a newcomer's).
            let hash = lease.hash;
            if let Some(waiter) = self.waiters.get_mut(&id) {
                waiter.request.text = OwnedText {
                    name_len: lease.name().len(),
                    text: lease.text,
                };
            }
            self.enqueue(id, true);
            self.table.unpin(hash);
        }
        let Some(waiter) = self.waiters.get(&id) else {
            later.discard(Some(waker));
            return Standing::TimedOut;
        };
        let hash = waiter.request.hash;
        if let Ok(queue) = self
            .queues
            .find_entry(hash, |q| *q.name == *waiter.request.name())
        {
            settle_queue(&mut self.table, &mut self.waiters, queue, now, later);
        }
        if let Some(lease) = self.waiters.get_mut(&id).and_then(|w| w.granted.take()) {
            // Granted just now, at `now`: live.
            later.discard(Some(waker));
            return self.collect(id, lease, later);
        }
        if !live(wait_deadline, now) {
            later.discard(Some(waker));
            self.leave(id, later);
            return Standing::TimedOut;
        }
        let mut until = wait_deadline;
        let Some(waiter) = self.waiters.get(&id) else {
            later.discard(Some(waker));
            return Standing::TimedOut;
        };
        let name = waiter.request.name();
        if let Some(queue) = self.queues.find_mut(hash, |q| *q.name == *name) {
            if queue.head(&self.waiters) == Some(id) {
                if let Some(deadline) = self.table.live_deadline(hash, name, now) {
                    until = until.min(deadline);
                }
            }
        }
        if let Some(waiter) = self.waiters.get_mut(&id) {
            later.discard(waiter.waker.replace(waker));
        }
        Standing::Waiting { id, until }
    }

    /// Removes granted waiter `id` (its grant taken out already as `lease`) and returns the
    /// grant.
    fn collect(&mut self, id: u64, lease: LeaseInfo, later: &mut Deferred) -> Standing {
        remove_waiter(&mut self.waiters, id, later);
        self.table.unpin(lease.hash);
        Standing::Granted(lease)
    }

    /// An `acquire` dropped while queued: forget it, and if the lease had just been handed
    /// to it, pass the lease on to the next waiter (or free it).
    pub(crate) fn cancel(&mut self, id: u64, now: Timestamp, later: &mut Deferred) {
        let granted = match self.waiters.get_mut(&id) {
            Some(waiter) => waiter.granted.take(),
            None => return,
        };
        match granted {
            Some(lease) => {
                remove_waiter(&mut self.waiters, id, later);
                self.table.unpin(lease.hash);
                self.release(&lease, now, later);
            }
            None => self.leave(id, later),
        }
    }

    /// Removes queued waiter `id`: from the map, leaving a tombstone in its queue (and the
    /// queue itself, if it empties); wakes the new head if it was the head.
    fn leave(&mut self, id: u64, later: &mut Deferred) {
        let Some(waiter) = self.waiters.get(&id) else {
            return;
        };
        let hash = waiter.request.hash;
        let entry = self
            .queues
            .find_entry(hash, |q| *q.name == *waiter.request.name());
        let Ok(mut entry) = entry else {
            // Not expected: a queued waiter's name has a queue.
            remove_waiter(&mut self.waiters, id, later);
            return;
        };
        let queue = entry.get_mut();
        let was_head = queue.head(&self.waiters) == Some(id);
        remove_waiter(&mut self.waiters, id, later);
        queue.queued = queue.queued.saturating_sub(1);
        match queue.head(&self.waiters) {
            None => {
                let (_, vacant) = entry.remove();
                shrink_if_sparse(vacant.into_table(), |q| q.hash);
                self.table.unpin(hash);
            }
            Some(head) => {
                if was_head {
                    // It sleeps until its own wait deadline; the holder's may be earlier.
                    later.wake(self.waiters.get_mut(&head).and_then(|w| w.waker.take()));
                }
                queue.compact(&self.waiters);
            }
        }
    }

    /// If `name` has waiters and no live lease, grants the lease to the head waiter and wakes
    /// it (and the new head, whose sleep must now follow the new holder). Returns whether
    /// `name` is taken for newcomers afterwards: waiters queued, or the head just granted.
    fn settle(&mut self, hash: u64, name: &str, now: Timestamp, later: &mut Deferred) -> bool {
        match self.queues.find_entry(hash, |q| *q.name == *name) {
            Ok(queue) => settle_queue(&mut self.table, &mut self.waiters, queue, now, later),
            Err(_) => false,
        }
    }
}

/// Removes waiter `id` from the map (not from its queue), its waker to be dropped later;
/// gives back the map's room once it is mostly empty.
fn remove_waiter(waiters: &mut HashMap<u64, Waiter>, id: u64, later: &mut Deferred) {
    if let Some(waiter) = waiters.remove(&id) {
        later.discard(waiter.waker);
    }
    if waiters.capacity() > 4 * waiters.len().max(4) {
        waiters.shrink_to(waiters.len());
    }
}

/// [`State::settle`] of the queue in `entry`.
fn settle_queue(
    table: &mut LockTable,
    waiters: &mut HashMap<u64, Waiter>,
    mut entry: hash_table::OccupiedEntry<'_, Queue>,
    now: Timestamp,
    later: &mut Deferred,
) -> bool {
    let now = table.clamp(now);
    let queue = entry.get_mut();
    let hash = queue.hash;
    if table.live_deadline(hash, &queue.name, now).is_some() {
        return true;
    }
    let Some(head_id) = queue.head(waiters) else {
        // Not expected: a queue is removed when its last waiter leaves.
        entry.remove();
        table.unpin(hash);
        return false;
    };
    let Some(head) = waiters.get_mut(&head_id) else {
        return true;
    };
    let text = core::mem::replace(&mut head.request.text, OwnedText::empty());
    match table.grant(hash, text, head.request.ttl, now) {
        Grant::Granted(lease) => {
            // The grant keeps the slot until it is collected: should it lapse first, its
            // waiter comes back to the head of the queue and is handed the slot again.
            table.pin(hash);
            head.granted = Some(lease);
            later.wake(head.waker.take());
            queue.ids.pop_front();
            queue.queued = queue.queued.saturating_sub(1);
            match queue.head(waiters) {
                Some(next) => later.wake(waiters.get_mut(&next).and_then(|w| w.waker.take())),
                None => {
                    let (_, vacant) = entry.remove();
                    shrink_if_sparse(vacant.into_table(), |q| q.hash);
                    table.unpin(hash);
                }
            }
        }
        // Not expected: the name's slot is pinned while it has waiters (queued, or handed
        // the lease and yet to collect it), so a lapsed one is reused in place and the
        // head never needs room. Should it happen, the head keeps waiting, with its text back.
        Grant::Busy(text) | Grant::Refused(_, text) => {
            debug_assert!(false, "a queued name lost its slot");
            head.request.text = text;
        }
    }
    true
}
