//! [`Pool`]: what the shards of one registry share (the fencing-token counter and the
//! `max_locks` count), and how a table takes tokens and counts entries against it.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use hashbrown::DefaultHashBuilder;

use super::LockTable;
use crate::config::Config;
use crate::padded::CachePadded;

/// What the shards of one registry share: the fencing-token counter (tokens strictly
/// increase across the whole registry) and, when [`Config::max_locks`] is set, the count of
/// entries held by all shards together.
#[derive(Default)]
pub(crate) struct Pool {
    next_token: CachePadded<AtomicU64>,
    entries: CachePadded<AtomicUsize>,
}

impl LockTable {
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
    pub(super) fn reserve_entry(&self) -> bool {
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
    pub(super) fn forget_entries(&self, count: usize) {
        if let (Some(_), Some(pool)) = (self.config.max_locks(), &self.pool) {
            if count > 0 {
                pool.entries.fetch_sub(count, Ordering::AcqRel);
            }
        }
    }
}

/// The fencing token of the next grant: from the registry's shared counter, or the table's
/// own. Both start at 1. (At one grant per nanosecond, a `u64` lasts 584 years.)
#[inline]
pub(super) fn take_token(pool: &Option<Arc<Pool>>, own: &mut u64) -> u64 {
    match pool {
        Some(pool) => pool.next_token.fetch_add(1, Ordering::AcqRel) + 1,
        None => {
            let token = *own;
            *own = token.saturating_add(1);
            token
        }
    }
}
