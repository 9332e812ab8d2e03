//! [`State`]: what a registry guards with its mutex: the lease table and the queues of
//! waiting `acquire` calls, with the hand-off rules that keep waiters first in line.
//!
//! Rules: waiters on a name are served in arrival order. Whenever an operation finds a name
//! with waiters and no live lease (after a release, or once the lease lapsed), it grants
//! the lease to the head waiter on the spot, so nobody can barge ahead of the queue.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::task::Waker;
use core::time::Duration;

use hashbrown::{HashMap, HashTable, hash_table};

use crate::error::LockError;
use crate::lease::{LeaseInfo, lease_text};
use crate::table::{Grant, Joined, LeaseSource, LockTable, OwnedText};
use crate::time::{Timestamp, live};

/// The table and the wait queues, guarded together by the registry's mutex.
pub(crate) struct State {
    pub(crate) table: LockTable,
    /// The queue of each name that has waiters; a queue is removed when it empties.
    queues: HashTable<Queue>,
    /// Every queued waiter, by id.
    waiters: HashMap<u64, Waiter>,
    next_waiter_id: u64,
}

struct Queue {
    hash: u64,
    name: Box<str>,
    ids: VecDeque<u64>,
}

/// One queued `acquire`: what to grant it, whom to wake, and the grant once made.
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
                text: lease_text(name, owner),
                name_len: name.len(),
            },
            hash,
            ttl,
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.text.text[..self.text.name_len]
    }

    /// The name's hash in the registry's tables.
    pub(crate) fn hash(&self) -> u64 {
        self.hash
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

/// Work kept for after the mutex is released: wakers to wake and a freed lease text to
/// drop, so that neither runs inside the critical section. Allocation free unless a
/// waiter is involved.
#[derive(Default)]
pub(crate) struct Deferred {
    wakers: Vec<Waker>,
    freed: Option<Box<str>>,
}

impl Deferred {
    fn wake(&mut self, waker: Option<Waker>) {
        if let Some(waker) = waker {
            self.wakers.push(waker);
        }
    }

    fn free(&mut self, text: Option<Box<str>>) {
        // At most one text per operation in practice; a second is simply dropped here.
        if self.freed.is_none() {
            self.freed = text;
        }
    }

    /// Wakes the collected wakers; the freed text is dropped with `self`.
    #[inline]
    pub(crate) fn run(self) {
        if !self.wakers.is_empty() {
            self.wakers.into_iter().for_each(Waker::wake);
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
        }
    }

    /// How many `acquire` calls are queued.
    pub(crate) fn waiters(&self) -> usize {
        self.waiters.len()
    }

    /// `try_lock` of quick-checked inputs (the other name rules run before a grant), `hash`
    /// being `name`'s hash, never ahead of the queue:
    /// a name with waiters is busy for everyone else. A grant is written to `granted` (an
    /// out-parameter, so that the busy path moves nothing large around).
    #[allow(clippy::too_many_arguments)]
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
        let source = Joined {
            name,
            owner,
            name_checked: false,
        };
        match self.table.grant(hash, source, ttl, now) {
            Grant::Granted(lease) => *granted = Some(lease),
            Grant::Busy(_) => {}
            Grant::Refused(err, _) => return Err(err),
        }
        Ok(())
    }

    /// The live lease on the checked `name`, after handing a lapsed one to a waiter.
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

    pub(crate) fn renew(
        &mut self,
        lease: &mut LeaseInfo,
        ttl: Duration,
        now: Timestamp,
        later: &mut Deferred,
    ) -> Result<(), LockError> {
        self.table.renew(lease, ttl, now)?;
        if !self.waiters.is_empty() {
            // The holder's deadline moved: the head waiter sleeps until it, so it must look again.
            if let Some(head) = self.head(lease.hash, lease.name()) {
                later.wake(self.waiters.get(&head).and_then(|w| w.waker.clone()));
            }
        }
        Ok(())
    }

    pub(crate) fn release(
        &mut self,
        lease: &LeaseInfo,
        now: Timestamp,
        later: &mut Deferred,
    ) -> bool {
        if !self.waiters.is_empty() && self.head(lease.hash, lease.name()).is_some() {
            // Someone waits for this name: end the lease in its slot and hand the slot on.
            let was_live = self.table.expire(lease, now);
            self.settle(lease.hash, lease.name(), now, later);
            return was_live;
        }
        let (was_live, text) = self.table.release_keeping_text(lease, now);
        later.free(text);
        was_live
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
        let name = text.name();
        match self.queues.entry(hash, |q| *q.name == *name, |q| q.hash) {
            hash_table::Entry::Occupied(mut queue) => queue.get_mut().ids.push_back(id),
            hash_table::Entry::Vacant(vacant) => {
                vacant.insert(Queue {
                    hash,
                    name: name.into(),
                    ids: VecDeque::from([id]),
                });
                // The name's slot stays through sweeps until its waiters are served.
                self.table.pin(hash);
            }
        }
        let waiter = Waiter {
            request: Request { text, hash, ttl },
            waker: None,
            granted: None,
        };
        self.waiters.insert(id, waiter);
        Standing::Waiting {
            id,
            until: now.saturating_add(wait),
        }
    }

    /// A later poll of waiter `id`, whose wait ends at `wait_deadline`: hand over a lapsed
    /// lease if it is first in line, report a grant, give up at the deadline, or say how
    /// long to sleep (the head waiter until the holder's deadline at the latest).
    pub(crate) fn poll_waiter(
        &mut self,
        id: u64,
        wait_deadline: Timestamp,
        now: Timestamp,
        waker: &Waker,
        later: &mut Deferred,
    ) -> Standing {
        let now = self.table.observe(now);
        let Some(waiter) = self.waiters.get(&id).filter(|w| w.granted.is_none()) else {
            return self.collect(id);
        };
        // A copy of the name, so that it can be used alongside `&mut self` (one small
        // allocation per wake-up of a waiter; never on the try_lock paths).
        let (hash, name): (u64, Box<str>) = (waiter.request.hash, waiter.request.name().into());
        self.settle(hash, &name, now, later);
        if self.waiters[&id].granted.is_some() {
            return self.collect(id);
        }
        if !live(wait_deadline, now) {
            self.leave_queue(id, hash, &name, later);
            return Standing::TimedOut;
        }
        let mut until = wait_deadline;
        if self.head(hash, &name) == Some(id) {
            if let Some(deadline) = self.table.live_deadline(hash, &name, now) {
                until = until.min(deadline);
            }
        }
        let waiter = self.waiters.get_mut(&id).expect("still queued");
        match &mut waiter.waker {
            Some(w) => w.clone_from(waker),
            None => waiter.waker = Some(waker.clone()),
        }
        Standing::Waiting { id, until }
    }

    /// An `acquire` dropped while queued: forget it, and if the lease had just been handed
    /// to it, pass the lease on to the next waiter (or free it).
    pub(crate) fn cancel(&mut self, id: u64, now: Timestamp, later: &mut Deferred) {
        match self.collect(id) {
            Standing::Granted(lease) => {
                self.release(&lease, now, later);
            }
            _ => {
                if let Some(waiter) = self.waiters.get(&id) {
                    let (hash, name): (u64, Box<str>) =
                        (waiter.request.hash, waiter.request.name().into());
                    self.leave_queue(id, hash, &name, later);
                }
            }
        }
    }

    /// Removes and returns waiter `id`'s grant, if it has one.
    fn collect(&mut self, id: u64) -> Standing {
        match self.waiters.get(&id) {
            Some(w) if w.granted.is_some() => {
                let waiter = self.waiters.remove(&id).expect("just seen");
                Standing::Granted(waiter.granted.expect("just seen"))
            }
            _ => Standing::TimedOut,
        }
    }

    /// Removes waiter `id` from its queue (and the queue, if it empties); wakes the new head.
    fn leave_queue(&mut self, id: u64, hash: u64, name: &str, later: &mut Deferred) {
        self.waiters.remove(&id);
        let Ok(mut entry) = self.queues.find_entry(hash, |q| &*q.name == name) else {
            return;
        };
        let ids = &mut entry.get_mut().ids;
        let was_head = ids.front() == Some(&id);
        ids.retain(|&other| other != id);
        match ids.front() {
            None => {
                entry.remove();
                self.table.unpin(hash);
            }
            Some(head) if was_head => {
                later.wake(self.waiters.get(head).and_then(|w| w.waker.clone()));
            }
            Some(_) => {}
        }
    }

    fn head(&self, hash: u64, name: &str) -> Option<u64> {
        self.queues
            .find(hash, |q| &*q.name == name)
            .and_then(|q| q.ids.front().copied())
    }

    /// If `name` has waiters and no live lease, grants the lease to the head waiter and wakes
    /// it (and the new head, whose sleep must now follow the new holder). Returns whether
    /// `name` is taken for newcomers afterwards: waiters queued, or the head just granted.
    fn settle(&mut self, hash: u64, name: &str, now: Timestamp, later: &mut Deferred) -> bool {
        let Ok(mut entry) = self.queues.find_entry(hash, |q| &*q.name == name) else {
            return false;
        };
        let now = self.table.clamp(now);
        if self.table.live_deadline(hash, name, now).is_some() {
            return true;
        }
        let ids = &mut entry.get_mut().ids;
        let Some(&head_id) = ids.front() else {
            entry.remove();
            self.table.unpin(hash);
            return false;
        };
        let head = self
            .waiters
            .get_mut(&head_id)
            .expect("queued ids are waiters");
        let empty = OwnedText {
            text: Box::default(),
            name_len: 0,
        };
        let text = core::mem::replace(&mut head.request.text, empty);
        match self.table.grant(hash, text, head.request.ttl, now) {
            Grant::Granted(lease) => {
                head.granted = Some(lease);
                later.wake(head.waker.take());
                ids.pop_front();
                match ids.front() {
                    Some(next) => later.wake(self.waiters.get(next).and_then(|w| w.waker.clone())),
                    None => {
                        entry.remove();
                        self.table.unpin(hash);
                    }
                }
            }
            // Not expected: the name's slot is pinned while it has waiters, so a lapsed one is
            // reused in place. Should it happen, the head keeps waiting, with its text back.
            Grant::Busy(text) | Grant::Refused(_, text) => head.request.text = text,
        }
        true
    }
}
