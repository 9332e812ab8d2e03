//! The random operations of the waiting property test, and how proptest draws them.

use proptest::prelude::*;

/// One step of a random case: names, owners, waiters and locks by index.
#[derive(Debug, Clone)]
pub enum Op {
    TryLock {
        name: usize,
        owner: usize,
        ttl: u64,
    },
    Acquire {
        name: usize,
        owner: usize,
        ttl: u64,
        wait: Option<u64>,
    },
    Poll(usize),
    Cancel(usize),
    Release(usize),
    DropLock(usize),
    Renew {
        lock: usize,
        ttl: u64,
    },
    Detach(usize),
    ForceRelease(usize),
    Sweep,
    Advance(u64),
}

pub fn op() -> impl Strategy<Value = Op> {
    let wait = prop_oneof![2 => (0u64..60).prop_map(Some), 1 => Just(None)];
    prop_oneof![
        4 => (0..3usize, 0..3usize, 1u64..40).prop_map(|(name, owner, ttl)| Op::TryLock { name, owner, ttl }),
        4 => (0..3usize, 0..3usize, 1u64..40, wait)
            .prop_map(|(name, owner, ttl, wait)| Op::Acquire { name, owner, ttl, wait }),
        4 => (0..6usize).prop_map(Op::Poll),
        1 => (0..6usize).prop_map(Op::Cancel),
        2 => (0..6usize).prop_map(Op::Release),
        1 => (0..6usize).prop_map(Op::DropLock),
        1 => (0..6usize, 1u64..40).prop_map(|(lock, ttl)| Op::Renew { lock, ttl }),
        1 => (0..6usize).prop_map(Op::Detach),
        1 => (0..3usize).prop_map(Op::ForceRelease),
        1 => Just(Op::Sweep),
        3 => (0u64..25).prop_map(Op::Advance),
    ]
}

/// `max_locks`: mostly small, so that names compete for room.
pub fn max_locks() -> impl Strategy<Value = Option<usize>> {
    prop_oneof![1 => Just(None), 3 => (1usize..=3).prop_map(Some)]
}
