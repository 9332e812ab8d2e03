//! A model engine: the kit's [`Protocol`] over a table in this process's memory, on a manual
//! clock, with an optional delay per call, and a freeze that holds requests as a frozen
//! server does. It lets the kit's machinery (waiting, keep-alive, drop, cancel safety, calls
//! refused for time) be tested without a server, under tokio's paused time.
//!
//! `state.rs` holds the table, `ops.rs` the operations on it, `protocol.rs` the
//! [`Protocol`] impl, `freeze.rs` the held requests.

#![allow(dead_code)]

mod freeze;
mod ops;
mod protocol;
mod state;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use alkstore_kit::{CommonConfig, Fallback, Job, Listener, Locks, Protocol, WakeSink};
use alkstore_mem::LockError;
use tokio::sync::broadcast;

use freeze::Freezer;
use state::{State, nanos};

/// The model's config.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelConfig {
    common: CommonConfig,
}
alkstore_kit::common_config!(ModelConfig);

/// The model engine.
pub struct Model {
    config: ModelConfig,
    state: Arc<Mutex<State>>,
    bell: broadcast::Sender<String>,
    delay: Arc<AtomicU64>,
    step_delay: Arc<AtomicU64>,
    /// Whether a withdrawal leaves a mark that a later step of the same waiter honours (as
    /// PostgreSQL's does; Redis's does not).
    marks: Arc<AtomicBool>,
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
    deaf: Arc<AtomicBool>,
    /// Whether the next `*` makes a listener panic.
    fragile: Arc<AtomicBool>,
    /// Requests held while frozen.
    freezer: Arc<Mutex<Freezer>>,
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

impl Nonsense {
    fn from_u64(n: u64) -> Self {
        match n {
            1 => Nonsense::HolderInThePast,
            2 => Nonsense::WaitDeadlineInThePast,
            _ => Nonsense::None,
        }
    }
}

impl Model {
    fn new(config: ModelConfig, state: State) -> Self {
        Model {
            config,
            state: Arc::new(Mutex::new(state)),
            bell: broadcast::channel(4096).0,
            delay: Arc::default(),
            step_delay: Arc::default(),
            marks: Arc::new(AtomicBool::new(true)),
            calls: Arc::default(),
            steps: Arc::default(),
            renewals: Arc::default(),
            nonsense: Arc::default(),
            listens: Arc::default(),
            deaf: Arc::default(),
            fragile: Arc::default(),
            freezer: Arc::default(),
        }
    }

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

    fn ring(&self, woke: impl IntoIterator<Item = String>) {
        for id in woke {
            let _ = self.bell.send(id);
        }
    }

    /// Leases held and entries queued, for the tests' checks.
    pub fn live(&self) -> (usize, usize) {
        let s = self.state();
        let now = s.now;
        let held = s.leases.values().filter(|l| l.deadline > now).count();
        (held, s.queues.values().map(|q| q.len()).sum())
    }
}

pub struct Bell {
    rx: broadcast::Receiver<String>,
    listens: Arc<AtomicU64>,
    deaf: Arc<AtomicBool>,
    fragile: Arc<AtomicBool>,
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
            freezer: Arc::clone(&self.freezer),
        }
    }
}

/// A multi-thread tokio runtime with `workers` workers, time on: what the model's tests run
/// on when they need one of their own.
pub fn runtime(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap()
}

/// A store on a fresh model with this `io_timeout`, and this waiter heartbeat (`None`: the
/// default).
pub async fn store_with(io: Duration, heartbeat: Option<Duration>) -> Locks<Model> {
    let config = ModelConfig::default().with_io_timeout(io);
    let config = match heartbeat {
        Some(every) => config.with_waiter_heartbeat(every),
        None => config,
    };
    Locks::connect_with("model://", config).await.unwrap()
}

/// A store on a fresh model (`io_timeout` 1 s) each of whose calls takes `delay`.
pub async fn store_delayed(delay: Duration) -> Locks<Model> {
    let locks = store_with(Duration::from_secs(1), None).await;
    locks.engine().set_delay(delay);
    locks
}

/// `n` seconds.
pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Asserts that a call was refused as `Unavailable`.
pub fn unavailable<T: std::fmt::Debug>(answer: Result<T, LockError>) {
    assert!(
        matches!(answer, Err(LockError::Unavailable { .. })),
        "{answer:?}"
    );
}

/// The error of a call the model did not answer.
fn frozen() -> LockError {
    alkstore_kit::unavailable("model: frozen, no answer")
}
