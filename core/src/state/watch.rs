//! The watchers of a lease: the wakers of pending [`Lapsed`](crate::Lapsed) and `keep_alive`
//! futures, woken should the lease end by another path than time.

use core::task::Waker;

use super::State;
use crate::deferred::Deferred;
use crate::lease::LeaseInfo;
use crate::time::Timestamp;

impl State {
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
    pub(super) fn shrink_watchers(&mut self) {
        if self.watchers.capacity() > 4 * self.watchers.len().max(8) {
            self.watchers.shrink_to(self.watchers.len());
        }
    }
}
