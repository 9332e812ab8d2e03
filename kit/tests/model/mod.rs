//! A model engine: the kit's [`Protocol`] over a table in this process's memory, on a manual
//! clock, with an optional delay per call. It lets the kit's machinery (waiting, keep-alive,
//! drop, cancel safety) be tested without a server, under tokio's paused time.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use alkstore_kit::{
    CommonConfig, Fallback, Grant, Held, Job, Listener, Protocol, Reply, Step, StepReply,
    WaitDeadline, WakeSink,
};
use alkstore_mem::{LeaseInfo, LockError, Snapshot, Timestamp, Waiting};
use tokio::sync::broadcast;

/// The model's config.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelConfig {
    common: CommonConfig,
}
alkstore_kit::common_config!(ModelConfig);

struct Lease {
    owner: String,
    token: u64,
    deadline: u64,
    /// The request (try_lock rid or waiter id) it was granted to.
    rid: String,
}

struct Waiter {
    id: String,
    owner: String,
    ttl: u64,
    wait_deadline: Option<u64>,
    /// Heartbeats run on real (tokio) time, as the engines' do: a moved test clock does not
    /// make every waiter look crashed.
    expires: tokio::time::Instant,
}

#[derive(Default)]
struct State {
    now: u64,
    last_token: u64,
    leases: BTreeMap<String, Lease>,
    queues: BTreeMap<String, VecDeque<Waiter>>,
    cancelled: HashSet<String>,
    released: HashSet<String>,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl State {
    fn ts(&self, at: u64) -> Timestamp {
        Timestamp::from_nanos(at)
    }

    fn grant(&mut self, name: &str, owner: &str, ttl: u64, rid: &str) -> Grant {
        self.last_token += 1;
        let deadline = self.now.saturating_add(ttl);
        self.leases.insert(
            name.into(),
            Lease {
                owner: owner.into(),
                token: self.last_token,
                deadline,
                rid: rid.into(),
            },
        );
        Grant {
            token: self.last_token,
            deadline: self.ts(deadline),
        }
    }

    /// Ends a lapsed lease and hands a free name to the first live waiter; returns the id
    /// to wake.
    fn settle(&mut self, name: &str) -> Option<String> {
        let now = self.now;
        if self.leases.get(name).is_some_and(|l| l.deadline <= now) {
            self.leases.remove(name);
        }
        if self.leases.contains_key(name) {
            return None;
        }
        let queue = self.queues.get_mut(name)?;
        while let Some(w) = queue.pop_front() {
            let dead = w.expires <= tokio::time::Instant::now()
                || w.wait_deadline.is_some_and(|d| d <= now);
            if dead {
                continue;
            }
            if queue.is_empty() {
                self.queues.remove(name);
            }
            self.grant(name, &w.owner, w.ttl, &w.id);
            return Some(w.id);
        }
        self.queues.remove(name);
        None
    }

    fn leave(&mut self, name: &str, id: &str) {
        if let Some(queue) = self.queues.get_mut(name) {
            queue.retain(|w| w.id != id);
            if queue.is_empty() {
                self.queues.remove(name);
            }
        }
    }
}

/// The model engine.
pub struct Model {
    config: ModelConfig,
    state: Arc<Mutex<State>>,
    bell: broadcast::Sender<String>,
    delay: Arc<AtomicU64>,
    step_delay: Arc<AtomicU64>,
    /// Whether a withdrawal leaves a mark that a later step of the same waiter honours (as
    /// PostgreSQL's does; Redis's does not).
    marks: Arc<std::sync::atomic::AtomicBool>,
    /// How many operations reached the model.
    pub calls: Arc<AtomicU64>,
    /// How many steps reached the model.
    pub steps: Arc<AtomicU64>,
    /// How many renewals reached the model.
    pub renewals: Arc<AtomicU64>,
    /// Nonsense a step answers with instead of the truth (see [`Nonsense`]).
    nonsense: Arc<AtomicU64>,
    /// How many times a listener started listening.
    pub listens: Arc<AtomicU64>,
    /// Whether listeners fail at once.
    deaf: Arc<std::sync::atomic::AtomicBool>,
    /// Whether the next `*` makes a listener panic.
    fragile: Arc<std::sync::atomic::AtomicBool>,
}

/// Nonsense the model's steps can answer with, to test that the kit survives an engine that
/// lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum Nonsense {
    /// The truth.
    None = 0,
    /// `Queued`, first in line behind a holder whose deadline has passed.
    HolderInThePast = 1,
    /// `Queued`, with a wait deadline that has passed.
    WaitDeadlineInThePast = 2,
}

impl Model {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// Every call waits this long before it reaches the table.
    pub fn set_delay(&self, delay: Duration) {
        self.delay.store(nanos(delay), Ordering::SeqCst);
    }

    /// Steps of a wait take this much longer than other calls (so that a withdrawal sent
    /// after a step can land before it).
    pub fn set_step_delay(&self, delay: Duration) {
        self.step_delay.store(nanos(delay), Ordering::SeqCst);
    }

    /// Sets the engine's clock to `nanos` (it may step back).
    pub fn set_clock(&self, nanos: u64) {
        self.state().now = nanos;
    }

    /// The engine's clock.
    pub fn clock(&self) -> u64 {
        self.state().now
    }

    /// Steps answer with `nonsense` from now on.
    pub fn answer_with(&self, nonsense: Nonsense) {
        self.nonsense.store(nonsense as u64, Ordering::SeqCst);
    }

    /// Listeners fail at once (their subscription returns as soon as it starts).
    pub fn deafen(&self) {
        self.deaf.store(true, Ordering::SeqCst);
    }

    /// The next `*` makes the listener that receives it panic.
    pub fn break_listener(&self) {
        self.fragile.store(true, Ordering::SeqCst);
    }

    /// Withdrawals leave no mark (a step that runs after one queues or grants again).
    pub fn without_marks(&self) {
        self.marks.store(false, Ordering::SeqCst);
    }

    async fn arrive(&self) {
        let delay = self.delay.load(Ordering::SeqCst);
        if delay > 0 {
            tokio::time::sleep(Duration::from_nanos(delay)).await;
        }
        self.calls.fetch_add(1, Ordering::SeqCst);
    }

    fn ring(&self, id: Option<String>) {
        if let Some(id) = id {
            let _ = self.bell.send(id);
        }
    }

    /// Leases held and entries queued, for the tests' checks.
    pub fn live(&self) -> (usize, usize) {
        let s = self.state();
        let now = s.now;
        let held = s.leases.values().filter(|l| l.deadline > now).count();
        (held, s.queues.values().map(VecDeque::len).sum())
    }
}

pub struct Bell {
    rx: broadcast::Receiver<String>,
    listens: Arc<AtomicU64>,
    deaf: Arc<std::sync::atomic::AtomicBool>,
    fragile: Arc<std::sync::atomic::AtomicBool>,
}

impl Listener for Bell {
    async fn listen<'a>(&'a mut self, sink: &'a dyn WakeSink) {
        self.listens.fetch_add(1, Ordering::SeqCst);
        if self.deaf.load(Ordering::SeqCst) {
            // The subscription fails at once.
            return;
        }
        sink.subscribed();
        loop {
            match self.rx.recv().await {
                Ok(message) => {
                    // A listener with a bug: a message it cannot parse makes it panic.
                    assert!(
                        !(message == "*" && self.fragile.swap(false, Ordering::SeqCst)),
                        "the listener panics on a message"
                    );
                    sink.deliver(&message);
                }
                Err(broadcast::error::RecvError::Lagged(_)) => sink.subscribed(),
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }
}

pub struct Direct(Model);

impl Fallback for Direct {
    async fn run(self, job: Job) -> bool {
        match job {
            Job::Release { name, token, rid } => self.0.release(&name, token, &rid).await.is_ok(),
            Job::Withdraw {
                name,
                id,
                unanswered,
            } => self.0.withdraw(&name, &id, unanswered).await.is_ok(),
        }
    }
}

impl Clone for Model {
    fn clone(&self) -> Self {
        Model {
            config: self.config.clone(),
            state: Arc::clone(&self.state),
            bell: self.bell.clone(),
            delay: Arc::clone(&self.delay),
            step_delay: Arc::clone(&self.step_delay),
            marks: Arc::clone(&self.marks),
            calls: Arc::clone(&self.calls),
            steps: Arc::clone(&self.steps),
            renewals: Arc::clone(&self.renewals),
            nonsense: Arc::clone(&self.nonsense),
            listens: Arc::clone(&self.listens),
            deaf: Arc::clone(&self.deaf),
            fragile: Arc::clone(&self.fragile),
        }
    }
}

impl Protocol for Model {
    type Config = ModelConfig;
    type Listener = Bell;
    type Fallback = Direct;
    const NAME: &'static str = "model";

    async fn connect(_url: &str, config: ModelConfig) -> Result<Self, LockError> {
        let state = State {
            now: 1_000_000_000_000,
            ..State::default()
        };
        Ok(Model {
            config,
            state: Arc::new(Mutex::new(state)),
            bell: broadcast::channel(4096).0,
            delay: Arc::default(),
            step_delay: Arc::default(),
            marks: Arc::new(std::sync::atomic::AtomicBool::new(true)),
            calls: Arc::default(),
            steps: Arc::default(),
            renewals: Arc::default(),
            nonsense: Arc::default(),
            listens: Arc::default(),
            deaf: Arc::default(),
            fragile: Arc::default(),
        })
    }

    fn config(&self) -> &ModelConfig {
        &self.config
    }

    async fn try_lock(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
        rid: &str,
    ) -> Result<Reply<Option<Grant>>, LockError> {
        self.arrive().await;
        let mut s = self.state();
        let woke = s.settle(name);
        let now = s.ts(s.now);
        let value = match s.leases.get(name) {
            Some(l) if l.rid == rid => Some(Grant {
                token: l.token,
                deadline: s.ts(l.deadline),
            }),
            Some(_) => None,
            None if s.queues.contains_key(name) => None,
            None => Some(s.grant(name, owner, nanos(ttl), rid)),
        };
        drop(s);
        self.ring(woke);
        Ok(Reply { value, now })
    }

    async fn step(&self, step: Step<'_>) -> Result<StepReply, LockError> {
        let extra = self.step_delay.load(Ordering::SeqCst);
        // Only when set: a sleep of zero still waits for the timer's next tick (1 ms), and a
        // step must land as soon as other calls do.
        if extra > 0 {
            tokio::time::sleep(Duration::from_nanos(extra)).await;
        }
        self.arrive().await;
        self.steps.fetch_add(1, Ordering::SeqCst);
        let mut s = self.state();
        let woke = s.settle(step.name);
        let now = s.now;
        let lie = self.nonsense.load(Ordering::SeqCst);
        if lie == Nonsense::HolderInThePast as u64 || lie == Nonsense::WaitDeadlineInThePast as u64
        {
            let past = Some(s.ts(now.saturating_sub(1_000_000_000)));
            let reply = StepReply::Queued {
                wait_deadline: if lie == Nonsense::WaitDeadlineInThePast as u64 {
                    past
                } else {
                    None
                },
                head_holder: if lie == Nonsense::HolderInThePast as u64 {
                    past
                } else {
                    None
                },
                now: s.ts(now),
            };
            return Ok(reply);
        }
        let reply = 'reply: {
            if s.cancelled.contains(step.id) {
                break 'reply StepReply::Over;
            }
            if let Some(l) = s.leases.get(step.name) {
                if l.rid == step.id {
                    let grant = Grant {
                        token: l.token,
                        deadline: s.ts(l.deadline),
                    };
                    break 'reply StepReply::Granted(Reply {
                        value: grant,
                        now: s.ts(now),
                    });
                }
            }
            let queued = s
                .queues
                .get(step.name)
                .and_then(|q| q.iter().position(|w| w.id == step.id));
            let wait_deadline = match step.deadline {
                WaitDeadline::Over => {
                    s.leave(step.name, step.id);
                    break 'reply StepReply::Over;
                }
                WaitDeadline::First => step.wait_left.map(|w| now.saturating_add(nanos(w))),
                WaitDeadline::Known(at) => at.map(Timestamp::as_nanos),
            };
            if wait_deadline.is_some_and(|d| d <= now) && step.wait_left != Some(Duration::ZERO) {
                s.leave(step.name, step.id);
                break 'reply StepReply::Over;
            }
            if queued.is_none()
                && !s.leases.contains_key(step.name)
                && !s.queues.contains_key(step.name)
            {
                let grant = s.grant(step.name, step.owner, nanos(step.ttl), step.id);
                break 'reply StepReply::Granted(Reply {
                    value: grant,
                    now: s.ts(now),
                });
            }
            if step.wait_left == Some(Duration::ZERO) {
                break 'reply StepReply::Over;
            }
            let expires = tokio::time::Instant::now() + step.heartbeat_expiry;
            let queue = s.queues.entry(step.name.into()).or_default();
            match queued {
                Some(i) => queue[i].expires = expires,
                None => queue.push_back(Waiter {
                    id: step.id.into(),
                    owner: step.owner.into(),
                    ttl: nanos(step.ttl),
                    wait_deadline,
                    expires,
                }),
            }
            let first = queue.front().is_some_and(|w| w.id == step.id);
            let head_holder = if first {
                s.leases.get(step.name).map(|l| s.ts(l.deadline))
            } else {
                None
            };
            StepReply::Queued {
                wait_deadline: wait_deadline.map(|d| s.ts(d)),
                head_holder,
                now: s.ts(now),
            }
        };
        drop(s);
        self.ring(woke);
        Ok(reply)
    }

    async fn withdraw(&self, name: &str, id: &str, unanswered: bool) -> Result<(), LockError> {
        self.arrive().await;
        let mut s = self.state();
        if unanswered && self.marks.load(Ordering::SeqCst) {
            s.cancelled.insert(id.into());
        }
        if s.leases.get(name).is_some_and(|l| l.rid == id) {
            s.leases.remove(name);
        }
        s.leave(name, id);
        let woke = s.settle(name);
        drop(s);
        self.ring(woke);
        Ok(())
    }

    async fn renew(
        &self,
        name: &str,
        token: u64,
        ttl: Duration,
    ) -> Result<Reply<Option<Timestamp>>, LockError> {
        self.arrive().await;
        self.renewals.fetch_add(1, Ordering::SeqCst);
        let mut s = self.state();
        let now = s.now;
        let value = match s.leases.get_mut(name) {
            Some(l) if l.token == token && now < l.deadline => {
                l.deadline = now.saturating_add(nanos(ttl));
                Some(Timestamp::from_nanos(l.deadline))
            }
            _ => None,
        };
        Ok(Reply {
            value,
            now: s.ts(now),
        })
    }

    async fn release(&self, name: &str, token: u64, rid: &str) -> Result<bool, LockError> {
        self.arrive().await;
        let mut s = self.state();
        let now = s.now;
        let live = match s.leases.get(name) {
            Some(l) if l.token == token => {
                let live = now < l.deadline;
                s.leases.remove(name);
                if live {
                    s.released.insert(rid.into());
                }
                live
            }
            _ => s.released.contains(rid),
        };
        let woke = s.settle(name);
        drop(s);
        self.ring(woke);
        Ok(live)
    }

    async fn is_held(&self, name: &str, token: u64) -> Result<Reply<Held>, LockError> {
        self.arrive().await;
        let s = self.state();
        let now = s.now;
        let held = match s.leases.get(name) {
            Some(l) if l.token == token && now < l.deadline => Held {
                live: true,
                deadline: s.ts(l.deadline),
            },
            _ => Held {
                live: false,
                deadline: s.ts(0),
            },
        };
        Ok(Reply {
            value: held,
            now: s.ts(now),
        })
    }

    async fn holder(&self, name: &str) -> Result<Option<LeaseInfo>, LockError> {
        self.arrive().await;
        let mut s = self.state();
        let woke = s.settle(name);
        let lease = s
            .leases
            .get(name)
            .map(|l| LeaseInfo::new(name, &l.owner, l.token, s.ts(l.deadline)));
        drop(s);
        self.ring(woke);
        Ok(lease)
    }

    async fn force_release(&self, name: &str) -> Result<Option<LeaseInfo>, LockError> {
        self.arrive().await;
        let mut s = self.state();
        let _ = s.settle(name);
        let ended = s
            .leases
            .remove(name)
            .map(|l| LeaseInfo::new(name, &l.owner, l.token, s.ts(l.deadline)));
        let woke = s.settle(name);
        drop(s);
        self.ring(woke);
        let _ = self.bell.send("*".into());
        Ok(ended)
    }

    async fn snapshot(&self) -> Result<Snapshot, LockError> {
        self.arrive().await;
        let mut s = self.state();
        let names: Vec<String> = s.leases.keys().chain(s.queues.keys()).cloned().collect();
        for name in names {
            let woke = s.settle(&name);
            self.ring(woke);
        }
        let mut snapshot = Snapshot::default();
        for (name, l) in &s.leases {
            snapshot
                .held
                .push(LeaseInfo::new(name, &l.owner, l.token, s.ts(l.deadline)));
        }
        for (name, queue) in &s.queues {
            for w in queue {
                snapshot.waiting.push(Waiting::new(name, &w.owner));
            }
        }
        Ok(snapshot)
    }

    async fn advance_test_clock(&self, by: Duration) -> Result<(), LockError> {
        {
            let mut s = self.state();
            s.now = s.now.saturating_add(nanos(by));
        }
        let _ = self.bell.send("*".into());
        Ok(())
    }

    fn listener(&self) -> Bell {
        Bell {
            rx: self.bell.subscribe(),
            listens: Arc::clone(&self.listens),
            deaf: Arc::clone(&self.deaf),
            fragile: Arc::clone(&self.fragile),
        }
    }

    fn fallback(&self) -> Direct {
        Direct(self.clone())
    }
}
