//! The model's [`Protocol`]: each operation runs one function of `ops.rs` on the table,
//! through [`Model::exec`] (delay, freeze, wake-ups).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use alkstore_kit::{Grant, Held, Protocol, Reply, Step, StepReply};
use alkstore_mem::{LeaseInfo, LockError, Snapshot, Timestamp};

use super::ops::{Done, OwnedStep};
use super::state::{State, nanos};
use super::{Bell, Direct, Model, ModelConfig, Nonsense};

/// One waiter to wake, as [`Model::exec`] takes it.
fn one<T>((value, woke): Done<T>) -> (T, Vec<String>) {
    (value, woke.into_iter().collect())
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
        Ok(Model::new(config, state))
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
        let (name, owner, rid) = (name.to_owned(), owner.to_owned(), rid.to_owned());
        self.exec(move |s| one(s.try_lock(&name, &owner, ttl, &rid)))
            .await
    }

    async fn step(&self, step: Step<'_>) -> Result<StepReply, LockError> {
        let extra = self.step_delay.load(Ordering::SeqCst);
        // Only when set: a sleep of zero still waits for the timer's next tick (1 ms), and a
        // step must land as soon as other calls do.
        if extra > 0 {
            tokio::time::sleep(Duration::from_nanos(extra)).await;
        }
        let step = OwnedStep::from(step);
        let lie = Nonsense::from_u64(self.nonsense.load(Ordering::SeqCst));
        let steps = Arc::clone(&self.steps);
        self.exec(move |s| {
            steps.fetch_add(1, Ordering::SeqCst);
            one(s.step(&step, lie))
        })
        .await
    }

    async fn withdraw(&self, name: &str, id: &str, unanswered: bool) -> Result<(), LockError> {
        let mark = unanswered && self.marks.load(Ordering::SeqCst);
        let (name, id) = (name.to_owned(), id.to_owned());
        self.exec(move |s| one(s.withdraw(&name, &id, mark))).await
    }

    async fn renew(
        &self,
        name: &str,
        token: u64,
        ttl: Duration,
    ) -> Result<Reply<Option<Timestamp>>, LockError> {
        let renewals = Arc::clone(&self.renewals);
        let name = name.to_owned();
        self.exec(move |s| {
            renewals.fetch_add(1, Ordering::SeqCst);
            one(s.renew(&name, token, ttl))
        })
        .await
    }

    async fn release(&self, name: &str, token: u64, rid: &str) -> Result<bool, LockError> {
        let (name, rid) = (name.to_owned(), rid.to_owned());
        self.exec(move |s| one(s.release(&name, token, &rid))).await
    }

    async fn is_held(&self, name: &str, token: u64) -> Result<Reply<Held>, LockError> {
        let name = name.to_owned();
        self.exec(move |s| (s.is_held(&name, token), Vec::new()))
            .await
    }

    async fn holder(&self, name: &str) -> Result<Option<LeaseInfo>, LockError> {
        let name = name.to_owned();
        self.exec(move |s| one(s.holder(&name))).await
    }

    async fn force_release(&self, name: &str) -> Result<Option<LeaseInfo>, LockError> {
        let name = name.to_owned();
        let ended = self.exec(move |s| one(s.force_release(&name))).await?;
        let _ = self.bell.send("*".into());
        Ok(ended)
    }

    async fn snapshot(&self) -> Result<Snapshot, LockError> {
        self.exec(State::snapshot).await
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
