//! The operations of the engine's protocol, each run inside one `BEGIN IMMEDIATE`
//! transaction ([`Tx`]) by the rules of [`queue`](crate::queue).

use alkstore_kit::{Grant, Held, Reply, Step, StepReply, WaitDeadline};
use alkstore_mem::{LeaseInfo, Snapshot, Timestamp, Waiting};
use rusqlite::{OptionalExtension, params};

use crate::busy::duration_us;
use crate::db::Tx;
use crate::queue::{grant_of, info, token_u64, ts, us};
use crate::stmts::Q;

impl Tx<'_, '_> {
    /// `try_lock`: see [`Protocol::try_lock`](alkstore_kit::Protocol::try_lock).
    pub(crate) fn try_lock(
        &mut self,
        name: &str,
        owner: &str,
        ttl: i64,
        rid: &str,
    ) -> rusqlite::Result<Reply<Option<Grant>>> {
        let (r, waiting) = self.lease_and_waiting(name)?;
        // No row and nobody waiting: free, nothing to settle (the common case: one lookup).
        let cur = if r.is_none() && !waiting {
            None
        } else {
            self.settle(name, r)?
        };
        let value = match cur {
            Some(cur) if cur.req.as_deref() == Some(rid) => Some(grant_of(&cur)),
            Some(_) => None,
            // Withdrawn before this transaction ran (the kit's undo, e.g. at a runtime's
            // shutdown, committed first on its own connection): nobody would hold a grant.
            // (`cancelled` was read with the state row, for `rid`: see `Db::write`.)
            None if self.cancelled => None,
            // The grant is the last write: the state row goes with it.
            None => Some(grant_of(&self.grant_last(name, owner, ttl, rid)?)),
        };
        Ok(Reply {
            value,
            now: ts(self.now),
        })
    }

    /// One step of a waiting `acquire` (see the module docs and
    /// [`Protocol::step`](alkstore_kit::Protocol::step)).
    pub(crate) fn step(&mut self, s: &Step<'_>) -> rusqlite::Result<StepReply> {
        let (name, id) = (s.name, s.id);
        let now = self.now;
        let r = self.lease(name)?;
        // Read with the state row, for this step's id (see `Db::write`).
        if self.cancelled {
            return Ok(StepReply::Over);
        }
        let wd = match s.deadline {
            WaitDeadline::Over => now,
            WaitDeadline::Known(Some(at)) => us(at),
            WaitDeadline::Known(None) => 0,
            WaitDeadline::First => match s.wait_left {
                None => 0,
                Some(left) => now.saturating_add(duration_us(left)).max(now),
            },
        };
        // A zero wait (or one whose time is up) never queues.
        let wd = if matches!(s.wait_left, Some(left) if left.is_zero())
            && s.deadline == WaitDeadline::First
        {
            now
        } else {
            wd
        };
        let over = wd != 0 && now >= wd;
        let granted: Option<Option<i64>> = self
            .st
            .get(Q::WaiterGet)?
            .query_row([id], |r| r.get(0))
            .optional()?;
        let queued = granted.is_some();
        if let Some(Some(token)) = granted {
            if let Some(r) = &r {
                if r.owner.is_some()
                    && r.req.as_deref() == Some(id)
                    && r.token == token
                    && now < r.deadline
                {
                    // Handed over and still live: picked up.
                    self.delete_waiter(id)?;
                    self.claim(name)?;
                    return Ok(StepReply::Granted(Reply {
                        value: grant_of(r),
                        now: ts(now),
                    }));
                }
            }
            // The hand-off lapsed (or was force-released) before this waiter came: back to
            // the head of the queue.
            let min: Option<i64> = self
                .st
                .get(Q::MinArrival)?
                .query_row([name], |r| r.get(0))?;
            let arrival = match min {
                Some(min) => min - 1,
                None => self.next_arrival(),
            };
            self.st
                .get(Q::WaiterRequeue)?
                .execute(params![id, arrival])?;
        }
        let heartbeat = self.raw.saturating_add(duration_us(s.heartbeat_expiry));
        let cur = if queued {
            if over {
                let cur = self.leave(name, id, r)?;
                self.store_settled(name, &cur)?;
                return Ok(StepReply::Over);
            }
            self.st.get(Q::WaiterHb)?.execute(params![id, heartbeat])?;
            let cur = self.settle(name, r)?;
            if let Some(c) = &cur {
                if c.req.as_deref() == Some(id) {
                    self.delete_waiter(id)?;
                    self.claim(name)?;
                    return Ok(StepReply::Granted(Reply {
                        value: grant_of(c),
                        now: ts(now),
                    }));
                }
            }
            cur
        } else {
            let cur = self.settle(name, r)?;
            match &cur {
                Some(c) if c.req.as_deref() == Some(id) && now < c.deadline => {
                    // This acquire's own lease: a step run again after its reply was lost.
                    self.claim(name)?;
                    return Ok(StepReply::Granted(Reply {
                        value: grant_of(c),
                        now: ts(now),
                    }));
                }
                None => {
                    let ttl = duration_us(s.ttl);
                    let lease = self.grant(name, s.owner, ttl, id, true)?;
                    return Ok(StepReply::Granted(Reply {
                        value: grant_of(&lease),
                        now: ts(now),
                    }));
                }
                Some(_) if over => return Ok(StepReply::Over),
                Some(_) => {}
            }
            let arrival = self.next_arrival();
            self.st.get(Q::WaiterAdd)?.execute(params![
                id,
                name,
                arrival,
                s.owner,
                duration_us(s.ttl),
                wd,
                heartbeat
            ])?;
            cur
        };
        // Queued. Keep the row (free with a hand-off pending, or held).
        let wait_deadline = (wd != 0).then(|| ts(wd));
        let head_holder = match &cur {
            Some(c) if c.owner.is_some() && now < c.deadline => {
                let first = self.head(name)?.map(|h| h.0);
                (first.as_deref() == Some(id)).then(|| ts(c.deadline))
            }
            _ => None,
        };
        if cur.is_none() {
            // No lease row may be missing while a waiter is queued: keep a free one.
            self.st.get(Q::LeasePut)?.execute(params![
                name,
                Option::<String>::None,
                0,
                0,
                0,
                Option::<String>::None,
                true
            ])?;
        }
        Ok(StepReply::Queued {
            wait_deadline,
            head_holder,
            now: ts(now),
        })
    }

    /// Withdraws request `id` from `name` (see
    /// [`Protocol::withdraw`](alkstore_kit::Protocol::withdraw)).
    pub(crate) fn withdraw(
        &mut self,
        name: &str,
        id: &str,
        unanswered: bool,
    ) -> rusqlite::Result<()> {
        if unanswered {
            self.st
                .get(Q::CancelledAdd)?
                .execute(params![id, self.raw])?;
            // Kept ten minutes: far longer than a step can stay in flight.
            self.st
                .get(Q::CancelledPrune)?
                .execute([self.raw - 600_000_000])?;
        }
        let mut r = self.lease(name)?;
        if let Some(row) = &mut r {
            if row.owner.is_some() && row.req.as_deref() == Some(id) {
                // Nobody holds it (the reply never reached a handle): it ends here.
                self.st.get(Q::LeaseFree)?.execute([name])?;
                row.owner = None;
            }
        }
        let exists = r.is_some();
        let cur = self.leave(name, id, r)?;
        if exists {
            self.store_settled(name, &cur)?;
        }
        Ok(())
    }

    /// `renew`: `Some(deadline)` when lease `token` is live and picked up.
    pub(crate) fn renew(
        &mut self,
        name: &str,
        token: u64,
        ttl: i64,
    ) -> rusqlite::Result<Reply<Option<Timestamp>>> {
        let r = self.lease(name)?;
        let value = match r {
            Some(r)
                if r.owner.is_some()
                    && token_u64(r.token) == token
                    && r.claimed
                    && self.now < r.deadline =>
            {
                let deadline = self.now.saturating_add(ttl);
                self.st
                    .get(Q::LeaseRenew)?
                    .execute(params![name, deadline, ttl])?;
                Some(ts(deadline))
            }
            _ => None,
        };
        Ok(Reply {
            value,
            now: ts(self.now),
        })
    }

    /// `release`: ends lease `token` (handing the name on); `true` when it was live.
    pub(crate) fn release(&mut self, name: &str, token: u64) -> rusqlite::Result<bool> {
        let (r, waiting) = self.lease_and_waiting(name)?;
        let Some(r) = r else {
            return Ok(false);
        };
        let mine = r.owner.is_some() && token_u64(r.token) == token;
        let live = mine && self.now < r.deadline;
        let cur = if mine {
            if waiting {
                self.hand_off(name)?
            } else {
                // The holder ends its own lease and nobody is handed anything: no later
                // reading of lease time can contradict this, so the floor stays.
                self.timeless = true;
                None
            }
        } else {
            self.settle(name, Some(r))?
        };
        self.store_settled(name, &cur)?;
        Ok(live)
    }

    /// `is_held`.
    pub(crate) fn is_held(&mut self, name: &str, token: u64) -> rusqlite::Result<Reply<Held>> {
        let r = self.lease(name)?;
        let value = match r {
            Some(r)
                if r.owner.is_some() && token_u64(r.token) == token && self.now < r.deadline =>
            {
                Held {
                    live: true,
                    deadline: ts(r.deadline),
                }
            }
            _ => Held {
                live: false,
                deadline: ts(0),
            },
        };
        Ok(Reply {
            value,
            now: ts(self.now),
        })
    }

    /// `holder`: the live lease on `name` (the name is settled first).
    pub(crate) fn holder(&mut self, name: &str) -> rusqlite::Result<Option<LeaseInfo>> {
        let r = self.lease(name)?;
        if r.is_none() {
            return Ok(None);
        }
        let cur = self.settle(name, r)?;
        self.store_settled(name, &cur)?;
        Ok(cur.map(|c| info(name, &c)))
    }

    /// `force_release`: ends the live lease on `name`, hands the name on, wakes everybody.
    pub(crate) fn force_release(&mut self, name: &str) -> rusqlite::Result<Option<LeaseInfo>> {
        let Some(r) = self.lease(name)? else {
            return Ok(None);
        };
        let (ended, cur) = if self.live(&r)? {
            if !r.claimed {
                // Handed to a waiter that has not picked it up: back in line (first).
                self.st
                    .get(Q::WaiterUnclaim)?
                    .execute([r.req.as_deref().unwrap_or("")])?;
            }
            let ended = info(name, &r);
            let cur = self.hand_off(name)?;
            // The old holder's keep_alive and lapsed find out now.
            self.ring("*")?;
            (Some(ended), cur)
        } else {
            (None, self.settle(name, Some(r))?)
        };
        if cur.is_none() {
            self.delete_lease(name)?;
        }
        Ok(ended)
    }

    /// `snapshot`: the live leases by name, then the live waiters by name and arrival.
    pub(crate) fn snapshot(&mut self) -> rusqlite::Result<Snapshot> {
        let mut snapshot = Snapshot::default();
        let mut st = self.st.get(Q::SnapLeases)?;
        let rows = st.query_map(params![self.now, self.raw], |r| {
            let name: String = r.get(0)?;
            let owner: String = r.get(1)?;
            let token: i64 = r.get(2)?;
            let deadline: i64 = r.get(3)?;
            Ok(LeaseInfo::new(
                &name,
                &owner,
                token_u64(token),
                ts(deadline),
            ))
        })?;
        for row in rows {
            snapshot.held.push(row?);
        }
        let mut st = self.st.get(Q::SnapWaiters)?;
        let rows = st.query_map(params![self.now, self.raw], |r| {
            let name: String = r.get(0)?;
            let owner: String = r.get(1)?;
            Ok(Waiting::new(&name, &owner))
        })?;
        for row in rows {
            snapshot.waiting.push(row?);
        }
        Ok(snapshot)
    }

    #[cfg(feature = "test-clock")]
    /// Test clock: moves lease time forward by `by_us` and wakes every sleeper.
    pub(crate) fn advance(&mut self, by_us: i64) -> rusqlite::Result<()> {
        self.st.get(Q::Advance)?.execute([by_us])?;
        self.now = self.now.saturating_add(by_us);
        self.ring("*")
    }
}
