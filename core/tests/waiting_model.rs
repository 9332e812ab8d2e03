//! Property test for waiting: random interleavings of try_lock, acquire (bounded or not,
//! polled by hand), cancellation, release, renew, detach, force_release, sweeps and clock
//! moves, on registries with and without `max_locks`, checked step by step against a small
//! model of the FIFO hand-off rules, lost hand-offs and the room they keep included. Also
//! checks that no waiter is forgotten:
//! - a waiter handed the lease has been woken since its last poll;
//! - after every step, every queued waiter has been woken since its last poll, or has a
//!   sleep registered no later than the time at which its standing can change without any
//!   event (its wait deadline; the head's: the holder's deadline, if earlier);
//! - at the end, the waiters left, polled only when woken (as an executor polls them) with
//!   the clock moved only to the next registered sleep, all resolve.
//!
//! `PROPTEST_CASES` sets the number of random cases (default 2048); the steps run and the
//! time taken are printed (`cargo test --test waiting_model -- --nocapture`).

#[path = "waiting_model/model.rs"]
mod model;
#[path = "waiting_model/ops.rs"]
mod ops;
#[path = "waiting_model/traced.rs"]
mod traced;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use alkstore_mem::{Acquire, Config, Lock, LockError, LockRegistry, Timestamp};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};

use model::{Answer, FOREVER, Model, ModelWaiter, NAMES, Start};
use ops::{Op, max_locks, op};
use traced::Traced;

const OWNERS: [&str; 3] = ["w1", "w2", "w3"];

struct Counter(AtomicUsize);
impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A real `acquire` future, polled by hand, and what the model knows of it.
struct RealWaiter {
    future: Pin<Box<Acquire<Traced>>>,
    wakes: Arc<Counter>,
    /// The wake count at the last poll.
    seen: usize,
    id: usize,
}

impl RealWaiter {
    fn waker(&self) -> Waker {
        Waker::from(self.wakes.clone())
    }

    fn woken(&self) -> bool {
        self.wakes.0.load(Ordering::SeqCst) > self.seen
    }

    fn poll(&mut self) -> Poll<Result<Option<Lock<Traced>>, LockError>> {
        self.seen = self.wakes.0.load(Ordering::SeqCst);
        let waker = self.waker();
        self.future.as_mut().poll(&mut Context::from_waker(&waker))
    }
}

fn static_name(name: &str) -> &'static str {
    NAMES.iter().find(|n| **n == name).unwrap()
}

fn fail(message: String) -> TestCaseError {
    TestCaseError::fail(message)
}

/// One random case: the registry, the model, and the futures and handles in play.
struct Run {
    clock: Traced,
    registry: LockRegistry<Traced>,
    model: Model,
    waiters: Vec<RealWaiter>,
    locks: Vec<Lock<Traced>>,
    next_id: usize,
}

impl Run {
    fn new(max_locks: Option<usize>) -> Self {
        let clock = Traced::default();
        let config = match max_locks {
            Some(max) => Config::new().with_max_locks(max),
            None => Config::new(),
        };
        Run {
            registry: LockRegistry::with_config(clock.clone(), config),
            clock,
            model: Model::new(max_locks),
            waiters: Vec::new(),
            locks: Vec::new(),
            next_id: 0,
        }
    }

    /// Polls real waiter `i` and checks the answer against the model.
    fn poll(&mut self, i: usize) -> Result<(), TestCaseError> {
        let id = self.waiters[i].id;
        let real = self.waiters[i].poll();
        let w = self.model.waiters[&id].clone();
        match (real, self.model.poll(id)) {
            (Poll::Ready(Ok(Some(lock))), Answer::Granted(token, deadline)) => {
                prop_assert_eq!((lock.owner(), lock.token()), (w.owner, token));
                prop_assert_eq!(lock.deadline(), Timestamp::from_millis(deadline));
                prop_assert!(lock.is_held(), "acquire returned a lapsed lease");
                self.waiters.remove(i);
                self.locks.push(lock);
            }
            (Poll::Ready(Ok(None)), Answer::TimedOut) => {
                prop_assert!(self.model.now >= w.wait_deadline, "gave up early");
                self.waiters.remove(i);
            }
            (Poll::Pending, Answer::Pending) => {
                prop_assert!(self.model.now < w.wait_deadline, "pending after its wait");
            }
            (real, expected) => {
                return Err(fail(format!(
                    "waiter #{id} on {}: real {:?}, model {expected:?}",
                    w.name,
                    real.map(|r| r.map(|l| l.map(|l| (l.owner().to_owned(), l.token()))))
                )));
            }
        }
        Ok(())
    }

    /// Releases (or drops) a held handle, in the model too.
    fn let_go(&mut self, i: usize, by_release: bool) -> Result<(), TestCaseError> {
        let lock = self.locks.remove(i);
        let expected = self.model.release(static_name(lock.name()), lock.token());
        if by_release {
            prop_assert_eq!(lock.release(), expected);
        }
        Ok(())
    }

    fn apply(&mut self, op: Op) -> Result<(), TestCaseError> {
        match op {
            Op::TryLock { name, owner, ttl } => {
                let (name, owner) = (NAMES[name], OWNERS[owner]);
                let real = self
                    .registry
                    .try_lock(name, owner, Duration::from_millis(ttl));
                match (real, self.model.start(name, owner, ttl)) {
                    (Ok(Some(lock)), Start::Granted(token, deadline)) => {
                        prop_assert_eq!(lock.token(), token);
                        prop_assert_eq!(lock.deadline(), Timestamp::from_millis(deadline));
                        self.locks.push(lock);
                    }
                    (Ok(None), Start::Busy) => {}
                    (Err(LockError::CapacityExceeded { .. }), Start::Full) => {}
                    (real, expected) => {
                        let real = real.map(|l| l.map(|l| l.token()));
                        return Err(fail(format!(
                            "try_lock({name}): real {real:?}, model {expected:?}"
                        )));
                    }
                }
            }
            Op::Acquire {
                name,
                owner,
                ttl,
                wait,
            } => self.acquire(name, owner, ttl, wait)?,
            Op::Poll(i) if i < self.waiters.len() => self.poll(i)?,
            Op::Cancel(i) if i < self.waiters.len() => {
                let id = self.waiters.remove(i).id;
                let w = self.model.waiters[&id].clone();
                match w.granted {
                    Some((token, _)) => {
                        self.model.waiters.remove(&id);
                        self.model.release(w.name, token);
                    }
                    None => self.model.leave_queue(id),
                }
            }
            Op::Release(i) if i < self.locks.len() => self.let_go(i, true)?,
            Op::DropLock(i) if i < self.locks.len() => self.let_go(i, false)?,
            Op::Renew { lock, ttl } if lock < self.locks.len() => {
                let handle = &mut self.locks[lock];
                let name = static_name(handle.name());
                let live = self.model.live(name).is_some_and(|l| l.1 == handle.token());
                prop_assert_eq!(handle.renew(Duration::from_millis(ttl)).is_ok(), live);
                if live {
                    let now = self.model.now;
                    self.model.leases.get_mut(name).unwrap().2 = now + ttl;
                }
            }
            Op::Detach(i) if i < self.locks.len() => self.locks.remove(i).detach(),
            Op::ForceRelease(name) => {
                let name = NAMES[name];
                let real = self.registry.force_release(name).map(|l| l.token());
                prop_assert_eq!(real, self.model.force_release(name), "force_release");
            }
            Op::Sweep => drop(self.registry.sweep()),
            Op::Advance(by) => {
                self.clock.clock.advance(Duration::from_millis(by));
                self.model.now += by;
            }
            _ => {}
        }
        Ok(())
    }

    /// The first poll of a new `acquire`: queue behind waiters, else grant, else refuse for
    /// want of room, else wait or give up.
    fn acquire(
        &mut self,
        name: usize,
        owner: usize,
        ttl: u64,
        wait: Option<u64>,
    ) -> Result<(), TestCaseError> {
        let (name, owner) = (NAMES[name], OWNERS[owner]);
        let mut future = self
            .registry
            .acquire(name, owner, Duration::from_millis(ttl));
        if let Some(wait) = wait {
            future = future.timeout(Duration::from_millis(wait));
        }
        let mut real = RealWaiter {
            future: Box::pin(future),
            wakes: Arc::new(Counter(AtomicUsize::new(0))),
            seen: 0,
            id: self.next_id,
        };
        self.next_id += 1;
        match (real.poll(), self.model.start(name, owner, ttl)) {
            (Poll::Ready(Ok(Some(lock))), Start::Granted(token, deadline)) => {
                prop_assert_eq!(lock.token(), token);
                prop_assert_eq!(lock.deadline(), Timestamp::from_millis(deadline));
                self.locks.push(lock);
            }
            (Poll::Ready(Err(LockError::CapacityExceeded { .. })), Start::Full) => {}
            (Poll::Ready(Ok(None)), Start::Busy) => prop_assert_eq!(wait, Some(0)),
            (Poll::Pending, Start::Busy) => {
                prop_assert_ne!(wait, Some(0));
                let wait_deadline = wait.map_or(FOREVER, |wait| self.model.now + wait);
                let waiter = ModelWaiter {
                    name,
                    owner,
                    ttl,
                    wait_deadline,
                    granted: None,
                };
                self.model.waiters.insert(real.id, waiter);
                self.model
                    .queues
                    .entry(name)
                    .or_default()
                    .push_back(real.id);
                self.waiters.push(real);
            }
            (answer, expected) => {
                let answer = answer.map(|r| r.map(|l| l.map(|l| l.token())));
                return Err(fail(format!(
                    "acquire({name}, wait {wait:?}): real {answer:?}, model {expected:?}"
                )));
            }
        }
        Ok(())
    }

    /// No waiter forgotten, no wake-up lost, and the registry's view agrees with the model.
    fn check(&mut self) -> Result<(), TestCaseError> {
        for real in &self.waiters {
            let w = &self.model.waiters[&real.id];
            if real.woken() {
                continue;
            }
            prop_assert!(
                w.granted.is_none(),
                "waiter #{} handed the lease, not woken",
                real.id
            );
            let due = self.model.due(real.id);
            if due == FOREVER {
                continue; // only an event can change its standing, and that event wakes it
            }
            let sleep = self.clock.sleep_of(&real.waker());
            prop_assert!(
                sleep.is_some_and(|s| s <= Timestamp::from_millis(due)),
                "waiter #{} on {} forgotten: not woken, asleep until {:?}, due at {} ms",
                real.id,
                w.name,
                sleep,
                due
            );
        }
        prop_assert_eq!(self.registry.waiters(), self.model.kept_waiters());
        // `holder` settles lapsed leases too (when anyone waits); the model does the same.
        for name in NAMES {
            if self.model.any_waiters() {
                self.model.settle(name);
            }
            let real = (self.registry.holder(name)).map(|h| (h.owner().to_owned(), h.token()));
            let expected = self.model.live(name).map(|(o, t, _)| (o.to_owned(), t));
            prop_assert_eq!(real, expected, "holder({})", name);
        }
        Ok(())
    }

    /// Lets go of every handle, then serves the waiters left as an executor would: polls
    /// only a woken one, and when none is, moves the clock to the next registered sleep.
    /// Every waiter must resolve; one left pending with no wake and no sleep is forgotten.
    fn drain(&mut self) -> Result<(), TestCaseError> {
        while !self.locks.is_empty() {
            self.let_go(0, false)?;
        }
        for _ in 0..100_000 {
            if self.waiters.is_empty() {
                prop_assert_eq!(self.registry.waiters(), 0);
                prop_assert_eq!(self.clock.clock.pending_sleeps(), 0, "sleeps leaked");
                return Ok(());
            }
            if let Some(i) = self.waiters.iter().position(RealWaiter::woken) {
                self.poll(i)?;
                while !self.locks.is_empty() {
                    self.let_go(0, true)?;
                }
                self.check()?;
                continue;
            }
            let Some(next) = self.clock.clock.next_sleep_deadline() else {
                let ids: Vec<usize> = self.waiters.iter().map(|w| w.id).collect();
                return Err(fail(format!(
                    "forgotten waiters {ids:?}: none woken, none asleep"
                )));
            };
            prop_assert_eq!(next.as_nanos() % 1_000_000, 0);
            self.clock.clock.set(next);
            self.model.now = next.as_millis();
        }
        Err(fail("the waiters never resolved".into()))
    }
}

fn run(max_locks: Option<usize>, ops: Vec<Op>) -> Result<usize, TestCaseError> {
    let steps = ops.len();
    let mut run = Run::new(max_locks);
    for op in ops {
        run.apply(op)?;
        run.check()?;
    }
    run.drain()?;
    Ok(steps)
}

#[test]
fn waiting_matches_the_fifo_hand_off_model() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2048);
    let config = ProptestConfig {
        cases,
        source_file: Some(file!()),
        ..ProptestConfig::default()
    };
    let steps = AtomicUsize::new(0);
    let started = Instant::now();
    let strategy = (max_locks(), proptest::collection::vec(op(), 1..80));
    let result = TestRunner::new(config).run(&strategy, |(max_locks, ops)| {
        steps.fetch_add(run(max_locks, ops)?, Ordering::Relaxed);
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
    println!(
        "waiting model: {cases} cases, {} steps in {:.1?}",
        steps.load(Ordering::Relaxed),
        started.elapsed()
    );
}
