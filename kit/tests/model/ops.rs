//! The model's operations on its table, one function each: what one script, function or
//! transaction does on a real engine. Each answers its reply and the waiter id to wake.

use std::time::Duration;

use alkstore_kit::{Grant, Held, Reply, Step, StepReply, WaitDeadline};
use alkstore_mem::{LeaseInfo, Snapshot, Timestamp, Waiting};

use super::Nonsense;
use super::state::{State, Waiter, nanos};

/// A [`Step`] with owned fields, so that a step held by a frozen model outlives its call.
pub(super) struct OwnedStep {
    name: String,
    owner: String,
    ttl: Duration,
    id: String,
    wait_left: Option<Duration>,
    deadline: WaitDeadline,
    heartbeat_expiry: Duration,
}

impl From<Step<'_>> for OwnedStep {
    fn from(s: Step<'_>) -> Self {
        OwnedStep {
            name: s.name.into(),
            owner: s.owner.into(),
            ttl: s.ttl,
            id: s.id.into(),
            wait_left: s.wait_left,
            deadline: s.deadline,
            heartbeat_expiry: s.heartbeat_expiry,
        }
    }
}

/// An answer and the waiter to wake.
pub(super) type Done<T> = (T, Option<String>);

impl State {
    pub(super) fn try_lock(
        &mut self,
        name: &str,
        owner: &str,
        ttl: Duration,
        rid: &str,
    ) -> Done<Reply<Option<Grant>>> {
        let woke = self.settle(name);
        let now = self.ts(self.now);
        let value = match self.leases.get(name) {
            Some(l) if l.rid == rid => Some(Grant {
                token: l.token,
                deadline: self.ts(l.deadline),
            }),
            Some(_) => None,
            None if self.queues.contains_key(name) => None,
            None => Some(self.grant(name, owner, nanos(ttl), rid)),
        };
        (Reply { value, now }, woke)
    }

    /// A lie instead of the truth (see [`Nonsense`]), if asked for one.
    fn nonsense(&self, lie: Nonsense) -> Option<StepReply> {
        let past = Some(self.ts(self.now.saturating_sub(1_000_000_000)));
        let (wait_deadline, head_holder) = match lie {
            Nonsense::None => return None,
            Nonsense::HolderInThePast => (None, past),
            Nonsense::WaitDeadlineInThePast => (past, None),
        };
        Some(StepReply::Queued {
            wait_deadline,
            head_holder,
            now: self.ts(self.now),
        })
    }

    pub(super) fn step(&mut self, step: &OwnedStep, lie: Nonsense) -> Done<StepReply> {
        let woke = self.settle(&step.name);
        if let Some(lie) = self.nonsense(lie) {
            return (lie, woke);
        }
        (self.step_truth(step), woke)
    }

    fn step_truth(&mut self, step: &OwnedStep) -> StepReply {
        let (name, id, now) = (step.name.as_str(), step.id.as_str(), self.now);
        if self.cancelled.contains(id) {
            return StepReply::Over;
        }
        if let Some(l) = self.leases.get(name).filter(|l| l.rid == id) {
            let value = Grant {
                token: l.token,
                deadline: self.ts(l.deadline),
            };
            let now = self.ts(now);
            return StepReply::Granted(Reply { value, now });
        }
        let queued = self
            .queues
            .get(name)
            .and_then(|q| q.iter().position(|w| w.id == id));
        let wait_deadline = match step.deadline {
            WaitDeadline::Over => {
                self.leave(name, id);
                return StepReply::Over;
            }
            WaitDeadline::First => step.wait_left.map(|w| now.saturating_add(nanos(w))),
            WaitDeadline::Known(at) => at.map(Timestamp::as_nanos),
        };
        if wait_deadline.is_some_and(|d| d <= now) && step.wait_left != Some(Duration::ZERO) {
            self.leave(name, id);
            return StepReply::Over;
        }
        if queued.is_none() && !self.leases.contains_key(name) && !self.queues.contains_key(name) {
            let value = self.grant(name, &step.owner, nanos(step.ttl), id);
            let now = self.ts(now);
            return StepReply::Granted(Reply { value, now });
        }
        if step.wait_left == Some(Duration::ZERO) {
            return StepReply::Over;
        }
        let expires = tokio::time::Instant::now() + step.heartbeat_expiry;
        let queue = self.queues.entry(name.into()).or_default();
        match queued {
            Some(i) => queue[i].expires = expires,
            None => queue.push_back(Waiter {
                id: id.into(),
                owner: step.owner.clone(),
                ttl: nanos(step.ttl),
                wait_deadline,
                expires,
            }),
        }
        let first = queue.front().is_some_and(|w| w.id == id);
        let head_holder = if first {
            self.leases.get(name).map(|l| self.ts(l.deadline))
        } else {
            None
        };
        StepReply::Queued {
            wait_deadline: wait_deadline.map(|d| self.ts(d)),
            head_holder,
            now: self.ts(now),
        }
    }

    pub(super) fn withdraw(&mut self, name: &str, id: &str, mark: bool) -> Done<()> {
        if mark {
            self.cancelled.insert(id.into());
        }
        if self.leases.get(name).is_some_and(|l| l.rid == id) {
            self.leases.remove(name);
        }
        self.leave(name, id);
        ((), self.settle(name))
    }

    pub(super) fn renew(
        &mut self,
        name: &str,
        token: u64,
        ttl: Duration,
    ) -> Done<Reply<Option<Timestamp>>> {
        let now = self.now;
        let value = match self.leases.get_mut(name) {
            Some(l) if l.token == token && now < l.deadline => {
                l.deadline = now.saturating_add(nanos(ttl));
                Some(Timestamp::from_nanos(l.deadline))
            }
            _ => None,
        };
        let now = self.ts(now);
        (Reply { value, now }, None)
    }

    pub(super) fn release(&mut self, name: &str, token: u64, rid: &str) -> Done<bool> {
        let now = self.now;
        let live = match self.leases.get(name) {
            Some(l) if l.token == token => {
                let live = now < l.deadline;
                self.leases.remove(name);
                if live {
                    self.released.insert(rid.into());
                }
                live
            }
            _ => self.released.contains(rid),
        };
        (live, self.settle(name))
    }

    pub(super) fn is_held(&self, name: &str, token: u64) -> Reply<Held> {
        let now = self.now;
        let value = match self.leases.get(name) {
            Some(l) if l.token == token && now < l.deadline => Held {
                live: true,
                deadline: self.ts(l.deadline),
            },
            _ => Held {
                live: false,
                deadline: self.ts(0),
            },
        };
        Reply {
            value,
            now: self.ts(now),
        }
    }

    fn lease_info(&self, name: &str) -> Option<LeaseInfo> {
        let l = self.leases.get(name)?;
        Some(LeaseInfo::new(name, &l.owner, l.token, self.ts(l.deadline)))
    }

    pub(super) fn holder(&mut self, name: &str) -> Done<Option<LeaseInfo>> {
        let woke = self.settle(name);
        (self.lease_info(name), woke)
    }

    pub(super) fn force_release(&mut self, name: &str) -> Done<Option<LeaseInfo>> {
        let _ = self.settle(name);
        let ended = self.lease_info(name);
        self.leases.remove(name);
        (ended, self.settle(name))
    }

    /// Every lease and entry, after settling every name; the ids to wake.
    pub(super) fn snapshot(&mut self) -> (Snapshot, Vec<String>) {
        let names: Vec<String> = self
            .leases
            .keys()
            .chain(self.queues.keys())
            .cloned()
            .collect();
        let woke = names.iter().filter_map(|n| self.settle(n)).collect();
        let mut snapshot = Snapshot::default();
        for name in self.leases.keys() {
            snapshot.held.extend(self.lease_info(name));
        }
        for (name, queue) in &self.queues {
            for w in queue {
                snapshot.waiting.push(Waiting::new(name, &w.owner));
            }
        }
        (snapshot, woke)
    }
}
