//! Property test: random sequences of operations against a small, obviously correct model.
//!
//! The model is a plain `BTreeMap<name, (owner, token, deadline)>` with the contract's rules
//! written out longhand. After every step, every result, every handle's `is_held` and every
//! name's `holder` must agree with it.

use std::collections::BTreeMap;
use std::time::Duration;

use alkstore_mem::{Config, Lock, LockError, LockRegistry, ManualClock, Timestamp};
use proptest::prelude::*;

const NAMES: [&str; 4] = ["a", "b", "tenant/1", "ключ"];
const OWNERS: [&str; 3] = ["w1", "w2", "w3"];
const MAX_LOCKS: usize = 3;

#[derive(Debug, Clone)]
enum Op {
    TryLock { name: usize, owner: usize, ttl: u64 },
    Renew { handle: usize, ttl: u64 },
    Release { handle: usize },
    Drop { handle: usize },
    Detach { handle: usize },
    Advance(u64),
    StepBack(u64),
    Sweep,
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
        1 => (0u64..40).prop_map(Op::StepBack),
        1 => Just(Op::Sweep),
    ]
}

/// The contract, longhand.
#[derive(Default)]
struct Model {
    /// name -> (owner, token, deadline in ms); lapsed entries may linger, as in the real table.
    leases: BTreeMap<&'static str, (&'static str, u64, u64)>,
    /// The latest clock reading seen (the table clamps to it).
    now: u64,
    next_token: u64,
}

impl Model {
    fn live(&self, name: &str) -> Option<(&'static str, u64, u64)> {
        self.leases
            .get(name)
            .copied()
            .filter(|&(_, _, deadline)| deadline > self.now)
    }

    fn live_count(&self) -> usize {
        self.leases.values().filter(|l| l.2 > self.now).count()
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
        if self.live(name).is_some() {
            return Ok(None);
        }
        if self.live_count() >= MAX_LOCKS {
            return Err("CapacityExceeded");
        }
        self.next_token += 1;
        let deadline = self.now + ttl;
        self.leases.insert(name, (owner, self.next_token, deadline));
        Ok(Some((self.next_token, deadline)))
    }

    fn renew(&mut self, name: &str, token: u64, ttl: u64) -> Result<u64, &'static str> {
        if ttl == 0 {
            return Err("InvalidTtl");
        }
        let now = self.now;
        match self.leases.get_mut(name) {
            Some(l) if l.1 == token && l.2 > now => {
                l.2 = now + ttl;
                Ok(l.2)
            }
            _ => Err("Expired"),
        }
    }

    fn release(&mut self, name: &str, token: u64) -> bool {
        match self.leases.get(name) {
            Some(&(_, t, deadline)) if t == token => {
                self.leases.remove(name);
                deadline > self.now
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
    let mut clock_ms = 0u64;

    for op in ops {
        match op {
            Op::TryLock { name, owner, ttl } => {
                let (name, owner) = (NAMES[name], OWNERS[owner]);
                let real = reg.try_lock(name, owner, Duration::from_millis(ttl));
                let expected = model.try_lock(name, owner, ttl);
                match (real, expected) {
                    (Ok(Some(lock)), Ok(Some((token, deadline)))) => {
                        prop_assert_eq!(lock.token(), token);
                        prop_assert_eq!(lock.deadline(), Timestamp::from_millis(deadline));
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
                            prop_assert_eq!(lock.deadline(), Timestamp::from_millis(deadline))
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
                clock_ms += by;
                clock.set(Timestamp::from_millis(clock_ms));
                model.now = model.now.max(clock_ms);
            }
            Op::StepBack(by) => {
                clock_ms = clock_ms.saturating_sub(by);
                clock.set(Timestamp::from_millis(clock_ms));
            }
            Op::Sweep => {
                reg.sweep();
            }
        }

        for lock in &handles {
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
                (owner.to_owned(), token, Timestamp::from_millis(deadline))
            });
            prop_assert_eq!(real, expected, "holder({})", name);
        }
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
