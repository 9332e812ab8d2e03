//! Keeping a table's memory proportional to its live leases: pinned slots (kept through
//! sweeps for waiters), the amortised sweep schedule, and giving back a hash table's room.

use hashbrown::HashTable;

use super::{LockTable, MIN_SWEEP_LEN};
use crate::time::Timestamp;

impl LockTable {
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
                free_if_empty(&mut self.pins, |p| p.0);
            }
        }
    }

    /// Counts one operation towards the next amortised sweep, and sweeps when it is due and
    /// a lease may have lapsed: a sweep of `n` entries every `n / 8` operations at most, so
    /// O(1) amortised, and lapsed entries go even when no new name is inserted. When due, it
    /// also gives back room beyond twice what the entries need.
    #[inline]
    pub(super) fn tick(&mut self, now: Timestamp) {
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

/// Frees all of `table`'s room once it is empty, else shrinks it as
/// [`shrink_if_sparse`] does: for the tables of waiters, whose names come and go (the lease
/// table keeps a little room instead, since a name is granted and released over and over).
pub(crate) fn free_if_empty<T>(table: &mut HashTable<T>, hash: impl Fn(&T) -> u64) {
    if table.is_empty() {
        if table.capacity() > 0 {
            *table = HashTable::new();
        }
    } else {
        shrink_if_sparse(table, hash);
    }
}

#[cold]
#[inline(never)]
fn shrink<T>(table: &mut HashTable<T>, hash: impl Fn(&T) -> u64) {
    table.shrink_to(table.len(), hash);
}
