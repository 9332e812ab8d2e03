//! [`State`]: what a registry guards with its mutex: the lease table and the queues of
//! waiting `acquire` calls, with the hand-off rules that keep waiters first in line.
//!
//! Rules: waiters on a name are served in arrival order. Whenever an operation finds a name
//! with waiters and no live lease (after a release, or once the lease lapsed), it grants
//! the lease to the head waiter on the spot, so nobody can barge ahead of the queue.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::task::Waker;
use core::time::Duration;

use hashbrown::{HashMap, HashTable};

use crate::error::LockError;
use crate::lease::{LeaseInfo, lease_text};
use crate::table::LockTable;
use crate::time::Timestamp;

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
    /// `name\0owner`, ready to become the lease's text.
    text: Arc<str>,
    name_len: usize,
    hash: u64,
    ttl: Duration,
    waker: Option<Waker>,
    granted: Option<LeaseInfo>,
}

/// A lock request that passed validation, ready to be granted or queued.
#[derive(Debug)]
pub(crate) struct Request {
    text: Arc<str>,
    name_len: usize,
    hash: u64,
    ttl: Duration,
}

impl Request {
    /// A request for `name`, whose hash in the table is `hash`; the inputs are checked.
    pub(crate) fn new(name: &str, owner: &str, hash: u64, ttl: Duration) -> Self {
        Request {
            text: lease_text(name, owner),
            name_len: name.len(),
            hash,
            ttl,
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.text[..self.name_len]
    }
}

/// How an `acquire` stands after a poll.
pub(crate) enum Standing {
    /// The lease is the waiter's.
    Granted(LeaseInfo),
    /// Refused at once (`wait` was zero and the name is busy).
    Busy,
    /// Refused with an error (a full table).
    Failed(LockError),
    /// Waiting, as waiter `id`; sleep until `until` unless woken first.
    Waiting { id: u64, until: Timestamp },
    /// The wait elapsed first; the waiter has left the queue.
    TimedOut,
}

/// Wakers collected under the mutex, woken after it is released. Empty (and allocation
/// free) unless a waiter is involved.
#[derive(Default)]
pub(crate) struct Wakeups(Vec<Waker>);

impl Wakeups {
    fn push(&mut self, waker: Option<Waker>) {
        if let Some(waker) = waker {
            self.0.push(waker);
        }
    }

    #[inline]
    pub(crate) fn wake_all(self) {
        if !self.0.is_empty() {
            self.0.into_iter().for_each(Waker::wake);
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

    /// `try_lock` of checked inputs, `hash` being `name`'s hash, never ahead of the queue:
    /// a name with waiters is busy for everyone else.
    pub(crate) fn try_lock(
        &mut self,
        hash: u64,
        name: &str,
        owner: &str,
        ttl: Duration,
        now: Timestamp,
        wake: &mut Wakeups,
    ) -> Result<Option<LeaseInfo>, LockError> {
        if !self.waiters.is_empty() && self.settle(hash, name, now, wake) {
            return Ok(None);
        }
        self.table
            .try_lock_checked(hash, name, ttl, now, || lease_text(name, owner))
    }

    /// The live lease on the checked `name`, after handing a lapsed one to a waiter.
    pub(crate) fn holder(
        &mut self,
        hash: u64,
        name: &str,
        now: Timestamp,
        wake: &mut Wakeups,
    ) -> Option<LeaseInfo> {
        if !self.waiters.is_empty() {
            self.settle(hash, name, now, wake);
        }
        self.table.holder_checked(hash, name, now)
    }

    pub(crate) fn renew(
        &mut self,
        lease: &mut LeaseInfo,
        ttl: Duration,
        now: Timestamp,
        wake: &mut Wakeups,
    ) -> Result<(), LockError> {
        self.table.renew(lease, ttl, now)?;
        if !self.waiters.is_empty() {
            // The holder's deadline moved: the head waiter sleeps until it, so it must look again.
            if let Some(head) = self.head(lease.hash, lease.name()) {
                wake.push(self.waiters.get_mut(&head).and_then(|w| w.waker.clone()));
            }
        }
        Ok(())
    }

    pub(crate) fn release(
        &mut self,
        lease: &LeaseInfo,
        now: Timestamp,
        wake: &mut Wakeups,
    ) -> bool {
        let was_live = self.table.release(lease, now);
        if !self.waiters.is_empty() {
            self.settle(lease.hash, lease.name(), now, wake);
        }
        was_live
    }

    /// The first poll of an `acquire`: grant at once if the name is free and nobody is
    /// queued, else answer `Busy` (`wait` zero) or join the queue's tail.
    pub(crate) fn start(
        &mut self,
        request: &Request,
        wait: Duration,
        now: Timestamp,
        wake: &mut Wakeups,
    ) -> Standing {
        let now = self.table.observe(now);
        let (name, hash) = (request.name(), request.hash);
        let queued_ahead = !self.waiters.is_empty() && self.settle(hash, name, now, wake);
        if !queued_ahead {
            let text = || Arc::clone(&request.text);
            match self
                .table
                .try_lock_checked(hash, name, request.ttl, now, text)
            {
                Ok(Some(lease)) => return Standing::Granted(lease),
                Ok(None) => {}
                Err(err) => return Standing::Failed(err),
            }
        }
        if wait.is_zero() {
            return Standing::Busy;
        }
        let id = self.next_waiter_id;
        self.next_waiter_id += 1;
        self.waiters.insert(
            id,
            Waiter {
                text: Arc::clone(&request.text),
                name_len: request.name_len,
                hash,
                ttl: request.ttl,
                waker: None,
                granted: None,
            },
        );
        let mut queue = self
            .queues
            .entry(hash, |q| &*q.name == name, |q| q.hash)
            .or_insert_with(|| Queue {
                hash,
                name: name.into(),
                ids: VecDeque::new(),
            });
        queue.get_mut().ids.push_back(id);
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
        wake: &mut Wakeups,
    ) -> Standing {
        let now = self.table.observe(now);
        let Some(waiter) = self.waiters.get(&id) else {
            return Standing::TimedOut;
        };
        let (hash, name_len, text) = (waiter.hash, waiter.name_len, Arc::clone(&waiter.text));
        let name = &text[..name_len];
        self.settle(hash, name, now, wake);
        let waiter = self.waiters.get_mut(&id).expect("settle removes no waiter");
        if let Some(lease) = waiter.granted.take() {
            self.waiters.remove(&id);
            return Standing::Granted(lease);
        }
        if now >= wait_deadline {
            self.leave_queue(id, hash, name, wake);
            return Standing::TimedOut;
        }
        match &mut waiter.waker {
            Some(w) => w.clone_from(waker),
            None => waiter.waker = Some(waker.clone()),
        }
        let mut until = wait_deadline;
        if self.head(hash, name) == Some(id) {
            if let Some(deadline) = self.table.live_deadline(hash, name, now) {
                until = until.min(deadline);
            }
        }
        Standing::Waiting { id, until }
    }

    /// An `acquire` dropped while queued: forget it, and if the lease had just been handed
    /// to it, pass the lease on to the next waiter (or free it).
    pub(crate) fn cancel(&mut self, id: u64, now: Timestamp, wake: &mut Wakeups) {
        let Some(waiter) = self.waiters.get_mut(&id) else {
            return;
        };
        match waiter.granted.take() {
            Some(lease) => {
                self.waiters.remove(&id);
                self.release(&lease, now, wake);
            }
            None => {
                let (hash, text, name_len) =
                    (waiter.hash, Arc::clone(&waiter.text), waiter.name_len);
                self.leave_queue(id, hash, &text[..name_len], wake);
            }
        }
    }

    /// Removes waiter `id` from its queue (and the queue, if it empties); wakes the new head.
    fn leave_queue(&mut self, id: u64, hash: u64, name: &str, wake: &mut Wakeups) {
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
            }
            Some(head) if was_head => {
                wake.push(self.waiters.get(head).and_then(|w| w.waker.clone()));
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
    /// waiters are still queued on `name` afterwards, i.e. whether a newcomer must queue.
    fn settle(&mut self, hash: u64, name: &str, now: Timestamp, wake: &mut Wakeups) -> bool {
        let Ok(mut entry) = self.queues.find_entry(hash, |q| &*q.name == name) else {
            return false;
        };
        if self.table.live_deadline(hash, name, now).is_some() {
            return true;
        }
        let ids = &mut entry.get_mut().ids;
        let Some(&head_id) = ids.front() else {
            entry.remove();
            return false;
        };
        let head = self
            .waiters
            .get_mut(&head_id)
            .expect("queued ids are waiters");
        let text = || Arc::clone(&head.text);
        // A full table (only possible if the lapsed entry was swept) leaves the head waiting.
        if let Ok(Some(lease)) = self.table.try_lock_checked(hash, name, head.ttl, now, text) {
            head.granted = Some(lease);
            wake.push(head.waker.take());
            ids.pop_front();
            match ids.front() {
                Some(next) => wake.push(self.waiters.get(next).and_then(|w| w.waker.clone())),
                None => {
                    entry.remove();
                }
            }
        }
        true
    }
}
