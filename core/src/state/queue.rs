//! The queues of waiting `acquire` calls: one per name, in arrival order, and the hand-off
//! rules that keep waiters first in line.
//!
//! # The queue rules
//! - Waiters on a name are served in arrival order. Whenever an operation finds a name with
//!   waiters and no live lease (after a release, or once the lease lapsed), it grants the
//!   lease to the head waiter on the spot, so nobody can barge ahead of the queue; a name
//!   with waiters is busy for every newcomer. A head waiter whose own wait is over by then
//!   is not handed the lease: it leaves (woken, it resolves to `None`) and the next waiter
//!   in time is served.
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
use core::task::Waker;

use hashbrown::{HashMap, hash_table};

use super::{Request, State};
use crate::deferred::Deferred;
use crate::lease::LeaseInfo;
use crate::table::{Grant, LockTable, OwnedText, free_if_empty};
use crate::time::{Timestamp, live};

/// The waiters of one name, in arrival order.
pub(super) struct Queue {
    hash: u64,
    pub(super) name: Box<str>,
    /// Ids in arrival order; an id whose waiter left (or was granted) is a tombstone.
    pub(super) ids: VecDeque<u64>,
    /// How many ids of `ids` are queued waiters (the rest are tombstones); never zero.
    queued: usize,
}

impl Queue {
    /// The first queued waiter, dropping the tombstones ahead of it.
    pub(super) fn head(&mut self, waiters: &HashMap<u64, Waiter>) -> Option<u64> {
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
pub(super) struct Waiter {
    /// What it asked for; its text moves to the table on the grant.
    pub(super) request: Request,
    /// When its wait ends (`Timestamp::MAX`: never): past it, it is never handed the lease.
    pub(super) wait_deadline: Timestamp,
    pub(super) waker: Option<Waker>,
    pub(super) granted: Option<LeaseInfo>,
}

impl State {
    /// Puts waiter `id` in its name's queue, at the tail (or at the head), making the queue
    /// (and pinning the name's slot through sweeps) if it is the first.
    pub(super) fn enqueue(&mut self, id: u64, at_head: bool) {
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

    /// Removes queued waiter `id`: from the map, leaving a tombstone in its queue (and the
    /// queue itself, if it empties); wakes the new head if it was the head.
    pub(super) fn leave(&mut self, id: u64, later: &mut Deferred) {
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
                free_if_empty(vacant.into_table(), |q| q.hash);
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
    pub(super) fn settle(
        &mut self,
        hash: u64,
        name: &str,
        now: Timestamp,
        later: &mut Deferred,
    ) -> bool {
        match self.queues.find_entry(hash, |q| *q.name == *name) {
            Ok(queue) => settle_queue(&mut self.table, &mut self.waiters, queue, now, later),
            Err(_) => false,
        }
    }

    /// After a renew of `lease`: the head waiter of its name sleeps until the holder's
    /// deadline, which moved, so it must look again.
    pub(super) fn wake_head(&mut self, lease: &LeaseInfo, later: &mut Deferred) {
        let name = lease.name();
        if let Some(queue) = self.queues.find_mut(lease.hash, |q| *q.name == *name) {
            if let Some(head) = queue.head(&self.waiters) {
                later.wake(self.waiters.get_mut(&head).and_then(|w| w.waker.take()));
            }
        }
    }
}

/// Removes waiter `id` from the map (not from its queue), its waker to be dropped later;
/// gives back the map's room once it is mostly empty.
pub(super) fn remove_waiter(waiters: &mut HashMap<u64, Waiter>, id: u64, later: &mut Deferred) {
    if let Some(waiter) = waiters.remove(&id) {
        later.discard(waiter.waker);
    }
    if waiters.is_empty() {
        // The last waiter of the shard: its room goes too (names with waiters come and go).
        if waiters.capacity() > 0 {
            *waiters = HashMap::new();
        }
    } else if waiters.capacity() > 4 * waiters.len().max(4) {
        waiters.shrink_to(waiters.len());
    }
}

/// [`State::settle`] of the queue in `entry`.
pub(super) fn settle_queue(
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
    // The head whose wait is over leaves instead of being handed the lease: woken, its next
    // poll resolves to `None`, and the lease goes to the next waiter still in time.
    let head_id = loop {
        let Some(head_id) = queue.head(waiters) else {
            // Every waiter's wait was over (a queue is removed when its last waiter leaves):
            // the name is free.
            entry.remove();
            table.unpin(hash);
            return false;
        };
        match waiters.get_mut(&head_id) {
            Some(head) if !live(head.wait_deadline, now) => {
                later.wake(head.waker.take());
                remove_waiter(waiters, head_id, later);
                queue.queued = queue.queued.saturating_sub(1);
            }
            Some(_) => break head_id,
            None => return true,
        }
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
                    free_if_empty(vacant.into_table(), |q| q.hash);
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
