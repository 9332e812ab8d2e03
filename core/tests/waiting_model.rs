//! Property test for waiting: random interleavings of try_lock, acquire (polled by hand),
//! cancellation, release, renew, detach and clock moves, checked step by step against a
//! small model of the FIFO hand-off rules. Also checks that no wake-up is lost: a waiter
//! that is handed the lease has been woken by the time anyone looks.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use alkstore_mem::{Acquire, Lock, LockRegistry, ManualClock, Timestamp};
use proptest::prelude::*;

const NAMES: [&str; 2] = ["a", "b"];
const OWNERS: [&str; 3] = ["w1", "w2", "w3"];

#[derive(Debug, Clone)]
enum Op {
    TryLock {
        name: usize,
        owner: usize,
        ttl: u64,
    },
    Acquire {
        name: usize,
        owner: usize,
        ttl: u64,
        wait: u64,
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
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..2usize, 0..3usize, 1u64..40).prop_map(|(name, owner, ttl)| Op::TryLock { name, owner, ttl }),
        4 => (0..2usize, 0..3usize, 1u64..40, 0u64..60)
            .prop_map(|(name, owner, ttl, wait)| Op::Acquire { name, owner, ttl, wait }),
        4 => (0..6usize).prop_map(Op::Poll),
        1 => (0..6usize).prop_map(Op::Cancel),
        2 => (0..6usize).prop_map(Op::Release),
        1 => (0..6usize).prop_map(Op::DropLock),
        1 => (0..6usize, 1u64..40).prop_map(|(lock, ttl)| Op::Renew { lock, ttl }),
        1 => (0..6usize).prop_map(Op::Detach),
        3 => (0u64..25).prop_map(Op::Advance),
    ]
}

struct Counter(AtomicUsize);
impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A real `acquire` future, polled by hand, and what the model knows of it.
struct RealWaiter {
    future: Pin<Box<Acquire<ManualClock>>>,
    wakes: Arc<Counter>,
    id: usize,
}

impl RealWaiter {
    fn poll(&mut self) -> Poll<Option<Lock<ManualClock>>> {
        let waker = Waker::from(self.wakes.clone());
        self.future
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .map(|r| r.expect("valid requests never fail here"))
    }
}

#[derive(Debug, Clone)]
struct ModelWaiter {
    name: &'static str,
    owner: &'static str,
    ttl: u64,
    wait_deadline: u64,
    /// (token, deadline) once handed the lease.
    granted: Option<(u64, u64)>,
}

/// What the model expects a poll of a waiter to answer.
#[derive(Debug)]
enum Answer {
    Granted(u64, u64),
    TimedOut,
    Pending,
}

#[derive(Default)]
struct Model {
    now: u64,
    next_token: u64,
    /// name -> (owner, token, deadline); may be lapsed.
    leases: BTreeMap<&'static str, (&'static str, u64, u64)>,
    queues: BTreeMap<&'static str, VecDeque<usize>>,
    waiters: BTreeMap<usize, ModelWaiter>,
}

impl Model {
    fn live(&self, name: &str) -> Option<(&'static str, u64, u64)> {
        self.leases.get(name).copied().filter(|l| l.2 > self.now)
    }

    fn grant(&mut self, name: &'static str, owner: &'static str, ttl: u64) -> (u64, u64) {
        self.next_token += 1;
        let deadline = self.now + ttl;
        self.leases.insert(name, (owner, self.next_token, deadline));
        (self.next_token, deadline)
    }

    fn queued(&self, name: &str) -> bool {
        self.queues.get(name).is_some_and(|q| !q.is_empty())
    }

    /// Hands a lapsed or released lease to the head waiter. Returns whether newcomers must
    /// treat the name as taken.
    fn settle(&mut self, name: &'static str) -> bool {
        if !self.queued(name) {
            return false;
        }
        if self.live(name).is_none() {
            let head = self.queues.get_mut(name).unwrap().pop_front().unwrap();
            let (owner, ttl) = (self.waiters[&head].owner, self.waiters[&head].ttl);
            let grant = self.grant(name, owner, ttl);
            self.waiters.get_mut(&head).unwrap().granted = Some(grant);
        }
        true
    }

    fn any_waiters(&self) -> bool {
        !self.waiters.is_empty()
    }

    fn try_lock(
        &mut self,
        name: &'static str,
        owner: &'static str,
        ttl: u64,
    ) -> Option<(u64, u64)> {
        if self.any_waiters() && self.settle(name) {
            return None;
        }
        if self.live(name).is_some() {
            return None;
        }
        Some(self.grant(name, owner, ttl))
    }

    fn release(&mut self, name: &'static str, token: u64) -> bool {
        let was_live = match self.leases.get(name) {
            Some(&(_, t, deadline)) if t == token => {
                self.leases.remove(name);
                deadline > self.now
            }
            _ => false,
        };
        if self.any_waiters() {
            self.settle(name);
        }
        was_live
    }

    /// A later poll of waiter `id`. A grant that is still live is collected; a grant that
    /// lapsed before the poll is lost: the waiter times out if its wait elapsed, else goes
    /// back to the head of the queue. A waiter in line settles its name, then times out or
    /// keeps waiting.
    fn poll(&mut self, id: usize) -> Answer {
        let w = self.waiters[&id].clone();
        if let Some((token, deadline)) = w.granted {
            if deadline > self.now {
                self.waiters.remove(&id);
                return Answer::Granted(token, deadline);
            }
            if self.now >= w.wait_deadline {
                self.waiters.remove(&id);
                self.release(w.name, token);
                return Answer::TimedOut;
            }
            self.waiters.get_mut(&id).unwrap().granted = None;
            self.queues.entry(w.name).or_default().push_front(id);
        }
        self.settle(w.name);
        if let Some((token, deadline)) = self.waiters[&id].granted {
            self.waiters.remove(&id);
            return Answer::Granted(token, deadline);
        }
        if self.now >= w.wait_deadline {
            self.leave_queue(id);
            return Answer::TimedOut;
        }
        Answer::Pending
    }

    fn leave_queue(&mut self, id: usize) {
        let name = self.waiters.remove(&id).unwrap().name;
        let queue = self.queues.get_mut(name).unwrap();
        queue.retain(|&w| w != id);
        if queue.is_empty() {
            self.queues.remove(name);
        }
    }
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let mut model = Model::default();
    let mut waiters: Vec<RealWaiter> = Vec::new();
    let mut locks: Vec<Lock<ManualClock>> = Vec::new();
    let mut next_id = 0usize;

    // Polls real waiter `i` and checks the answer against the model.
    let poll = |i: usize,
                waiters: &mut Vec<RealWaiter>,
                model: &mut Model,
                locks: &mut Vec<Lock<ManualClock>>|
     -> Result<(), TestCaseError> {
        let id = waiters[i].id;
        let real = waiters[i].poll();
        let w = model.waiters[&id].clone();
        let name = w.name;
        match (real, model.poll(id)) {
            (Poll::Ready(Some(lock)), Answer::Granted(token, deadline)) => {
                prop_assert_eq!((lock.owner(), lock.token()), (w.owner, token));
                prop_assert_eq!(lock.deadline(), Timestamp::from_millis(deadline));
                prop_assert!(lock.is_held(), "acquire returned a lapsed lease");
                waiters.remove(i);
                locks.push(lock);
            }
            (Poll::Ready(None), Answer::TimedOut) => {
                prop_assert!(
                    model.now >= w.wait_deadline,
                    "gave up before its wait elapsed"
                );
                waiters.remove(i);
            }
            (Poll::Pending, Answer::Pending) => {
                prop_assert!(
                    model.now < w.wait_deadline,
                    "still pending after its wait elapsed"
                );
            }
            (real, expected) => {
                return Err(TestCaseError::fail(format!(
                    "waiter #{id} on {name}: real {:?}, model {expected:?}",
                    real.map(|r| r.map(|l| (l.owner().to_owned(), l.token())))
                )));
            }
        }
        Ok(())
    };

    for op in ops {
        match op {
            Op::TryLock { name, owner, ttl } => {
                let (name, owner) = (NAMES[name], OWNERS[owner]);
                let real = registry
                    .try_lock(name, owner, Duration::from_millis(ttl))
                    .unwrap();
                let expected = model.try_lock(name, owner, ttl);
                prop_assert_eq!(
                    real.as_ref().map(|l| (l.token(), l.deadline())),
                    expected.map(|(t, d)| (t, Timestamp::from_millis(d)))
                );
                locks.extend(real);
            }
            Op::Acquire {
                name,
                owner,
                ttl,
                wait,
            } => {
                let (name, owner) = (NAMES[name], OWNERS[owner]);
                let future = registry
                    .acquire(name, owner, Duration::from_millis(ttl))
                    .timeout(Duration::from_millis(wait));
                let mut real = RealWaiter {
                    future: Box::pin(future),
                    wakes: Arc::new(Counter(AtomicUsize::new(0))),
                    id: next_id,
                };
                next_id += 1;
                // The model of the first poll: queue behind waiters, else grant, else wait or give up.
                let answer = real.poll();
                let taken = model.any_waiters() && model.settle(name);
                let expected = if !taken && model.live(name).is_none() {
                    Some(model.grant(name, owner, ttl))
                } else {
                    None
                };
                match (answer, expected) {
                    (Poll::Ready(Some(lock)), Some((token, deadline))) => {
                        prop_assert_eq!(
                            (lock.token(), lock.deadline()),
                            (token, Timestamp::from_millis(deadline))
                        );
                        locks.push(lock);
                    }
                    (Poll::Ready(None), None) => prop_assert_eq!(wait, 0),
                    (Poll::Pending, None) => {
                        prop_assert!(wait > 0);
                        model.waiters.insert(
                            real.id,
                            ModelWaiter {
                                name,
                                owner,
                                ttl,
                                wait_deadline: model.now + wait,
                                granted: None,
                            },
                        );
                        model.queues.entry(name).or_default().push_back(real.id);
                        waiters.push(real);
                    }
                    (answer, expected) => {
                        return Err(TestCaseError::fail(format!(
                            "acquire({name}, wait {wait}): real {:?}, model {expected:?}",
                            answer.map(|r| r.map(|l| l.token()))
                        )));
                    }
                }
            }
            Op::Poll(i) if i < waiters.len() => poll(i, &mut waiters, &mut model, &mut locks)?,
            Op::Cancel(i) if i < waiters.len() => {
                let real = waiters.remove(i);
                let id = real.id;
                drop(real);
                let w = model.waiters[&id].clone();
                match w.granted {
                    Some((token, _)) => {
                        model.waiters.remove(&id);
                        model.release(w.name, token);
                    }
                    None => model.leave_queue(id),
                }
            }
            Op::Release(i) if i < locks.len() => {
                let lock = locks.remove(i);
                let name = NAMES.iter().find(|n| **n == lock.name()).unwrap();
                let expected = model.release(name, lock.token());
                prop_assert_eq!(lock.release(), expected);
            }
            Op::DropLock(i) if i < locks.len() => {
                let lock = locks.remove(i);
                let name = NAMES.iter().find(|n| **n == lock.name()).unwrap();
                model.release(name, lock.token());
                drop(lock);
            }
            Op::Renew { lock, ttl } if lock < locks.len() => {
                let handle = &mut locks[lock];
                let name = NAMES.iter().find(|n| **n == handle.name()).unwrap();
                let live = model.live(name).is_some_and(|l| l.1 == handle.token());
                prop_assert_eq!(handle.renew(Duration::from_millis(ttl)).is_ok(), live);
                if live {
                    let now = model.now;
                    model.leases.get_mut(name).unwrap().2 = now + ttl;
                }
            }
            Op::Detach(i) if i < locks.len() => locks.remove(i).detach(),
            Op::Advance(by) => {
                clock.advance(Duration::from_millis(by));
                model.now += by;
            }
            _ => {}
        }

        // Lost wake-ups: every waiter the model has handed the lease to was woken.
        for real in &waiters {
            if model.waiters[&real.id].granted.is_some() {
                prop_assert!(
                    real.wakes.0.load(Ordering::SeqCst) > 0,
                    "waiter #{} granted but never woken",
                    real.id
                );
            }
        }
        prop_assert_eq!(registry.waiters(), model.waiters.len());
        // `holder` settles lapsed leases too (when anyone waits); the model does the same.
        for name in NAMES {
            if model.any_waiters() {
                model.settle(name);
            }
            let real = registry
                .holder(name)
                .map(|h| (h.owner().to_owned(), h.token()));
            let expected = model.live(name).map(|(o, t, _)| (o.to_owned(), t));
            prop_assert_eq!(real, expected, "holder({})", name);
        }
    }

    // Drain: poll every waiter until its wait has surely elapsed; all must resolve and
    // nothing may stay queued.
    clock.advance(Duration::from_secs(10));
    model.now += 10_000;
    while !waiters.is_empty() {
        poll(0, &mut waiters, &mut model, &mut locks)?;
    }
    drop(locks);
    prop_assert_eq!(registry.waiters(), 0);
    prop_assert_eq!(clock.pending_sleeps(), 0, "sleeps leaked");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn waiting_matches_the_fifo_hand_off_model(ops in proptest::collection::vec(op(), 1..60)) {
        run(ops)?;
    }
}
