//! The reference model of waiting: leases, FIFO queues, hand-offs (lost ones included) and
//! the room that `max_locks` counts. Times in milliseconds.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

pub const NAMES: [&str; 3] = ["a", "b", "c"];

/// A wait without limit.
pub const FOREVER: u64 = u64::MAX;

#[derive(Debug, Clone)]
pub struct ModelWaiter {
    pub name: &'static str,
    pub owner: &'static str,
    pub ttl: u64,
    /// [`FOREVER`] for an unbounded wait.
    pub wait_deadline: u64,
    /// (token, deadline) once handed the lease, until collected.
    pub granted: Option<(u64, u64)>,
}

/// What the model expects a later poll of a waiter to answer.
#[derive(Debug)]
pub enum Answer {
    Granted(u64, u64),
    TimedOut,
    Pending,
}

/// What a `try_lock`, or the first poll of an `acquire`, finds.
#[derive(Debug, PartialEq)]
pub enum Start {
    /// Granted: (token, deadline).
    Granted(u64, u64),
    /// Held, or queued for.
    Busy,
    /// Free, but `max_locks` names hold room already.
    Full,
}

#[derive(Default)]
pub struct Model {
    pub now: u64,
    next_token: u64,
    max_locks: Option<usize>,
    /// name -> (owner, token, deadline); may be lapsed.
    pub leases: BTreeMap<&'static str, (&'static str, u64, u64)>,
    pub queues: BTreeMap<&'static str, VecDeque<usize>>,
    pub waiters: BTreeMap<usize, ModelWaiter>,
}

impl Model {
    pub fn new(max_locks: Option<usize>) -> Self {
        Model {
            max_locks,
            ..Model::default()
        }
    }

    pub fn live(&self, name: &str) -> Option<(&'static str, u64, u64)> {
        self.leases.get(name).copied().filter(|l| l.2 > self.now)
    }

    pub fn grant(&mut self, name: &'static str, owner: &'static str, ttl: u64) -> (u64, u64) {
        self.next_token += 1;
        let deadline = self.now + ttl;
        self.leases.insert(name, (owner, self.next_token, deadline));
        (self.next_token, deadline)
    }

    fn queued(&self, name: &str) -> bool {
        self.queues.get(name).is_some_and(|q| !q.is_empty())
    }

    /// Hands a lapsed or released lease to the head waiter: always possible, since a name
    /// with waiters keeps its room. A head whose wait is over leaves the queue instead (its
    /// next poll answers `TimedOut`) and the next one is served. Returns whether newcomers
    /// must treat the name as taken.
    pub fn settle(&mut self, name: &'static str) -> bool {
        if !self.queued(name) {
            return false;
        }
        if self.live(name).is_none() {
            let now = self.now;
            let over = |w: &ModelWaiter| w.wait_deadline != FOREVER && now >= w.wait_deadline;
            while let Some(&first) = self.queues[name].front() {
                if !over(&self.waiters[&first]) {
                    break;
                }
                self.queues.get_mut(name).unwrap().pop_front();
            }
            if !self.queued(name) {
                self.queues.remove(name);
                return false;
            }
            let head = self.queues.get_mut(name).unwrap().pop_front().unwrap();
            if self.queues[name].is_empty() {
                self.queues.remove(name);
            }
            let (owner, ttl) = (self.waiters[&head].owner, self.waiters[&head].ttl);
            let grant = self.grant(name, owner, ttl);
            self.waiters.get_mut(&head).unwrap().granted = Some(grant);
        }
        true
    }

    /// How many waiters the registry keeps: queued, or handed a grant (a head that left its
    /// queue because its wait was over is gone, though its next poll is still to answer).
    pub fn kept_waiters(&self) -> usize {
        let queued = |id: &usize| self.queues.values().any(|q| q.contains(id));
        (self.waiters.iter())
            .filter(|(id, w)| w.granted.is_some() || queued(id))
            .count()
    }

    pub fn any_waiters(&self) -> bool {
        !self.waiters.is_empty()
    }

    /// The names whose room counts against `max_locks`: held by a live lease, queued for,
    /// or handed to a waiter that has not collected the grant yet (lapsed or not).
    fn counted(&self) -> BTreeSet<&'static str> {
        let live = self.leases.keys().filter(|n| self.live(n).is_some());
        let queued = self.queues.keys();
        let handed = (self.waiters.values())
            .filter(|w| w.granted.is_some())
            .map(|w| &w.name);
        live.chain(queued).chain(handed).copied().collect()
    }

    /// `try_lock`, or the first poll of an `acquire`: never ahead of the queue, and a new
    /// name only while there is room.
    pub fn start(&mut self, name: &'static str, owner: &'static str, ttl: u64) -> Start {
        if self.any_waiters() && self.settle(name) {
            return Start::Busy;
        }
        if self.live(name).is_some() {
            return Start::Busy;
        }
        let counted = self.counted();
        if !counted.contains(name) && self.max_locks.is_some_and(|max| counted.len() >= max) {
            return Start::Full;
        }
        let (token, deadline) = self.grant(name, owner, ttl);
        Start::Granted(token, deadline)
    }

    pub fn release(&mut self, name: &'static str, token: u64) -> bool {
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

    /// Ends the live lease on `name`, handing it to the head waiter; its token.
    pub fn force_release(&mut self, name: &'static str) -> Option<u64> {
        let (_, token, _) = self.live(name)?;
        self.leases.remove(name);
        if self.any_waiters() {
            self.settle(name);
        }
        Some(token)
    }

    /// A later poll of waiter `id`. A grant that is still live (in the table: it may have
    /// been force-released) is collected; a grant that lapsed before the poll is lost: the
    /// waiter times out if its wait elapsed, else goes back to the head of the queue. A
    /// waiter in line settles its name, then times out or keeps waiting.
    pub fn poll(&mut self, id: usize) -> Answer {
        let w = self.waiters[&id].clone();
        if let Some((token, deadline)) = w.granted {
            if self.live(w.name).is_some_and(|l| l.1 == token) {
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

    /// Waiter `id` leaves (it may have left its queue already: a head whose wait was over).
    pub fn leave_queue(&mut self, id: usize) {
        let name = self.waiters.remove(&id).unwrap().name;
        if let Some(queue) = self.queues.get_mut(name) {
            queue.retain(|&w| w != id);
            if queue.is_empty() {
                self.queues.remove(name);
            }
        }
    }

    /// When the standing of queued waiter `id` changes with no event to wake it: its wait
    /// deadline, and for the head of its queue the holder's deadline if earlier (now if the
    /// name is free: it is to be granted). [`FOREVER`] when only an event can change it.
    pub fn due(&self, id: usize) -> u64 {
        let w = &self.waiters[&id];
        let head = self.queues.get(w.name).and_then(|q| q.front()) == Some(&id);
        if !head {
            return w.wait_deadline;
        }
        let holder = self.live(w.name).map_or(self.now, |l| l.2);
        w.wait_deadline.min(holder)
    }
}
