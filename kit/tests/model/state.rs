//! The model's table: leases, queues and marks, and the rules its operations share (grant,
//! settle a lapsed lease and hand over, leave a queue).

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::time::Duration;

use alkstore_kit::Grant;
use alkstore_mem::Timestamp;

pub(super) struct Lease {
    pub(super) owner: String,
    pub(super) token: u64,
    pub(super) deadline: u64,
    /// The request (try_lock rid or waiter id) it was granted to.
    pub(super) rid: String,
}

pub(super) struct Waiter {
    pub(super) id: String,
    pub(super) owner: String,
    pub(super) ttl: u64,
    pub(super) wait_deadline: Option<u64>,
    /// Heartbeats run on real (tokio) time, as the engines' do: a moved test clock does not
    /// make every waiter look crashed.
    pub(super) expires: tokio::time::Instant,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) now: u64,
    pub(super) last_token: u64,
    pub(super) leases: BTreeMap<String, Lease>,
    pub(super) queues: BTreeMap<String, VecDeque<Waiter>>,
    pub(super) cancelled: HashSet<String>,
    pub(super) released: HashSet<String>,
}

pub(super) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl State {
    pub(super) fn ts(&self, at: u64) -> Timestamp {
        Timestamp::from_nanos(at)
    }

    pub(super) fn grant(&mut self, name: &str, owner: &str, ttl: u64, rid: &str) -> Grant {
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
    pub(super) fn settle(&mut self, name: &str) -> Option<String> {
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

    pub(super) fn leave(&mut self, name: &str, id: &str) {
        if let Some(queue) = self.queues.get_mut(name) {
            queue.retain(|w| w.id != id);
            if queue.is_empty() {
                self.queues.remove(name);
            }
        }
    }
}
