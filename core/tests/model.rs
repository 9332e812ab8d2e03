//! Property test: random sequences of operations against a small, obviously correct model.
//!
//! The model is a plain `BTreeMap<name, (owner, token, deadline)>` with the contract's rules
//! written out longhand. Every result must agree with it, and so must every handle's
//! `is_held` and every name's `holder` at the `Verify` steps (not after every step: looking
//! is itself an operation that reads the clock, and would hide a clamp that is per shard).
//!
//! Time: the registry's now is the latest clock reading any accepted operation has seen, on
//! any name (one floor for the whole registry); refused calls see nothing. A deadline that
//! saturates at `Timestamp::MAX` never lapses.

use std::collections::BTreeMap;
use std::time::Duration;

use alkstore_mem::{Config, Lock, LockError, LockRegistry, ManualClock, Timestamp};
use proptest::prelude::*;

const NAMES: [&str; 4] = ["a", "b", "tenant/1", "ключ"];
const OWNERS: [&str; 3] = ["w1", "w2", "w3"];
const MAX_LOCKS: usize = 3;

#[derive(Debug, Clone)]
enum Op {
    TryLock {
        name: usize,
        owner: usize,
        ttl: u64,
    },
    Renew {
        handle: usize,
        ttl: u64,
    },
    Release {
        handle: usize,
    },
    Drop {
        handle: usize,
    },
    Detach {
        handle: usize,
    },
    Advance(u64),
    StepBack(u64),
    /// The clock jumps to `u64::MAX` nanoseconds.
    JumpToMax,
    Sweep,
    Verify,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..NAMES.len(), 0..OWNERS.len(), 0u64..60)
            .prop_map(|(name, owner, ttl)| Op::TryLock { name, owner, ttl }),
        2 => (0usize..8, 0u64..60).prop_map(|(handle, ttl)| Op::Renew { handle, ttl }),
        1 => (0usize..8).prop_map(|handle| Op::Release { handle }),
        1 => (0usize..8).prop_map(|handle| Op::Drop { handle }),
        1 => (0usize..8).prop_map(|handle| Op::Detach { handle }),
        3 => (0u64..40).prop_map(Op::Advance),
        2 => (0u64..40).prop_map(Op::StepBack),
        1 => Just(Op::Sweep),
        // Rare: once at MAX, the registry stays there.
        3 => prop_oneof![29 => Just(Op::Verify), 1 => Just(Op::JumpToMax)],
    ]
}

/// The contract, longhand.
#[derive(Default)]
struct Model {
    /// name -> (owner, token, deadline in ns); lapsed entries may linger, as in the real table.
    leases: BTreeMap<&'static str, (&'static str, u64, u64)>,
    /// The latest clock reading an accepted operation has seen, in ns (the registry clamps
    /// to it).
    now: u64,
    /// What the clock reads, in ns.
    clock: u64,
    next_token: u64,
}

/// Whether a deadline is live at `now`: before it, or forever at `u64::MAX`.
fn is_live(deadline: u64, now: u64) -> bool {
    deadline > now || deadline == u64::MAX
}

const MS: u64 = 1_000_000;

impl Model {
    /// An accepted operation reads the clock.
    fn observe(&mut self) {
        self.now = self.now.max(self.clock);
    }

    fn live(&self, name: &str) -> Option<(&'static str, u64, u64)> {
        self.leases
            .get(name)
            .copied()
            .filter(|&(_, _, deadline)| is_live(deadline, self.now))
    }

    fn live_count(&self) -> usize {
        self.leases
            .values()
            .filter(|l| is_live(l.2, self.now))
            .count()
    }

    fn try_lock(
        &mut self,
        name: &'static str,
        owner: &'static str,
        ttl: u64,
    ) -> Result<Option<(u64, u64)>, &'static str> {
        if ttl == 0 {
            return Err("InvalidTtl");
        }
        self.observe();
        if self.live(name).is_some() {
            return Ok(None);
        }
        if self.live_count() >= MAX_LOCKS {
            return Err("CapacityExceeded");
        }
        self.next_token += 1;
        let deadline = self.now.saturating_add(ttl * MS);
        self.leases.insert(name, (owner, self.next_token, deadline));
        Ok(Some((self.next_token, deadline)))
    }

    fn renew(&mut self, name: &str, token: u64, ttl: u64) -> Result<u64, &'static str> {
        if ttl == 0 {
            return Err("InvalidTtl");
        }
        self.observe();
        let now = self.now;
        match self.leases.get_mut(name) {
            Some(l) if l.1 == token && is_live(l.2, now) => {
                l.2 = now.saturating_add(ttl * MS);
                Ok(l.2)
            }
            _ => Err("Expired"),
        }
    }

    fn release(&mut self, name: &str, token: u64) -> bool {
        self.observe();
        match self.leases.get(name) {
            Some(&(_, t, deadline)) if t == token => {
                self.leases.remove(name);
                is_live(deadline, self.now)
            }
            _ => false,
        }
    }
}

fn kind(err: &LockError) -> &'static str {
    match err {
        LockError::InvalidTtl { .. } => "InvalidTtl",
        LockError::Expired { .. } => "Expired",
        LockError::CapacityExceeded { .. } => "CapacityExceeded",
        other => panic!("unexpected error {other:?}"),
    }
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let clock = ManualClock::new();
    let reg = LockRegistry::with_config(clock.clone(), Config::default().with_max_locks(MAX_LOCKS));
    let mut model = Model::default();
    let mut handles: Vec<Lock<ManualClock>> = Vec::new();

    for op in ops {
        match op {
            Op::TryLock { name, owner, ttl } => {
                let (name, owner) = (NAMES[name], OWNERS[owner]);
                let real = reg.try_lock(name, owner, Duration::from_millis(ttl));
                let expected = model.try_lock(name, owner, ttl);
                match (real, expected) {
                    (Ok(Some(lock)), Ok(Some((token, deadline)))) => {
                        prop_assert_eq!(lock.token(), token);
                        prop_assert_eq!(lock.deadline(), Timestamp::from_nanos(deadline));
                        prop_assert_eq!((lock.name(), lock.owner()), (name, owner));
                        handles.push(lock);
                    }
                    (Ok(None), Ok(None)) => {}
                    (Err(e), Err(k)) => prop_assert_eq!(kind(&e), k),
                    (real, expected) => {
                        return Err(TestCaseError::fail(format!(
                            "try_lock({name}, {owner}, {ttl}): real {real:?}, model {expected:?}"
                        )));
                    }
                }
            }
            Op::Renew { handle, ttl } => {
                if let Some(lock) = handles.get_mut(handle) {
                    let expected = model.renew(lock.name(), lock.token(), ttl);
                    match (lock.renew(Duration::from_millis(ttl)), expected) {
                        (Ok(()), Ok(deadline)) => {
                            prop_assert_eq!(lock.deadline(), Timestamp::from_nanos(deadline))
                        }
                        (Err(e), Err(k)) => prop_assert_eq!(kind(&e), k),
                        (real, expected) => {
                            return Err(TestCaseError::fail(format!(
                                "renew: real {real:?}, model {expected:?}"
                            )));
                        }
                    }
                }
            }
            Op::Release { handle } | Op::Drop { handle } | Op::Detach { handle }
                if handle >= handles.len() => {}
            Op::Release { handle } => {
                let lock = handles.remove(handle);
                let expected = model.release(lock.name(), lock.token());
                prop_assert_eq!(lock.release(), expected);
            }
            Op::Drop { handle } => {
                let lock = handles.remove(handle);
                model.release(lock.name(), lock.token());
                drop(lock);
            }
            Op::Detach { handle } => handles.remove(handle).detach(),
            Op::Advance(by) => {
                model.clock = model.clock.saturating_add(by * MS);
                clock.set(Timestamp::from_nanos(model.clock));
            }
            Op::StepBack(by) => {
                model.clock = model.clock.saturating_sub(by * MS);
                clock.set(Timestamp::from_nanos(model.clock));
            }
            Op::JumpToMax => {
                model.clock = u64::MAX;
                clock.set(Timestamp::MAX);
            }
            Op::Sweep => {
                model.observe();
                reg.sweep();
            }
            Op::Verify => verify(&reg, &handles, &mut model)?,
        }
    }
    verify(&reg, &handles, &mut model)
}

/// Every handle's `is_held` and every name's `holder` agree with the model.
fn verify(
    reg: &LockRegistry<ManualClock>,
    handles: &[Lock<ManualClock>],
    model: &mut Model,
) -> Result<(), TestCaseError> {
    model.observe();
    for lock in handles {
        let expected = model
            .live(lock.name())
            .is_some_and(|(_, token, _)| token == lock.token());
        prop_assert_eq!(lock.is_held(), expected, "is_held of {:?}", lock);
    }
    for name in NAMES {
        let real = reg
            .holder(name)
            .map(|h| (h.owner().to_owned(), h.token(), h.deadline()));
        let expected = model.live(name).map(|(owner, token, deadline)| {
            (owner.to_owned(), token, Timestamp::from_nanos(deadline))
        });
        prop_assert_eq!(real, expected, "holder({})", name);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn registry_matches_the_reference_model(ops in proptest::collection::vec(op(), 1..80)) {
        run(ops)?;
    }
}
