//! [`State`]: what a registry guards with its mutex: the lease table and the queues of
//! waiting `acquire` calls, with the hand-off rules that keep waiters first in line.
//!
//! The queue rules are written once, at the top of [`queue`] (the queues and the hand-off);
//! [`waiting`] is an `acquire`'s side of them, [`watch`] the watchers of a lease.

mod queue;
mod request;
mod waiting;
mod watch;

use alloc::vec::Vec;
use core::task::Waker;
use core::time::Duration;

use hashbrown::{HashMap, HashTable};

use crate::deferred::Deferred;
use crate::error::LockError;
use crate::lease::LeaseInfo;
use crate::snapshot::{Snapshot, Waiting};
use crate::table::{Grant, Joined, LockTable};
use crate::time::Timestamp;

use queue::{Queue, Waiter};
pub(crate) use request::Request;
pub(crate) use waiting::Standing;

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
}
