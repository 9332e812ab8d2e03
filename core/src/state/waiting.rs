//! The state's side of a waiting `acquire`: its first poll ([`State::start`]), its later
//! polls ([`State::poll_waiter`]: collecting a grant, or losing a lapsed hand-off) and its
//! cancellation, by the rules in [`queue`](super::queue).

use core::task::Waker;
use core::time::Duration;

use super::queue::{Waiter, remove_waiter, settle_queue};
use super::{Request, State};
use crate::deferred::Deferred;
use crate::error::LockError;
use crate::lease::LeaseInfo;
use crate::table::{Grant, LeaseSource, OwnedText};
use crate::time::{Timestamp, live};

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

impl State {
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
        let until = now.saturating_add(wait);
        let waiter = Waiter {
            request: Request { text, hash, ttl },
            wait_deadline: until,
            waker: None,
            granted: None,
        };
        self.waiters.insert(id, waiter);
        self.enqueue(id, false);
        Standing::Waiting { id, until }
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
}
