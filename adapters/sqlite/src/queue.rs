//! The operations, each run inside one `BEGIN IMMEDIATE` transaction ([`Tx`]): SQLite's
//! single writer serializes them with every other process's operations and with the users'
//! fenced transactions, so each reads, decides and writes with nothing in between.
//!
//! # The queue rules (as on PostgreSQL, one writer instead of row locks)
//! - A lease row exists while a name is held or has waiters; `owner` NULL: free.
//! - A lease is live while lease time is before its deadline and it was picked up
//!   (`claimed`), or was handed to a waiter whose heartbeat is still fresh.
//! - Whoever finds a name's lease released or lapsed ([`Tx::settle`]) hands it in the same
//!   transaction to the first live waiter in arrival order ([`Tx::hand_off`]): dead entries
//!   (heartbeat or wait deadline passed) are deleted on the way; the waiter is told by a bell.
//! - A waiter picks a handed lease up in its next step (`claimed` = 1). A hand-off that lapsed
//!   before it came puts it back at the head of the queue.
//! - A `try_lock` that meets a live lease or a queue gets `None`: nobody barges.
//! - Withdrawing a request deletes its entry and ends a lease granted to it and not picked
//!   up (it passes on); if it was first, the new first waiter is told.

use alkstore_kit::Grant;
use alkstore_mem::{LeaseInfo, Timestamp};
use rusqlite::{OptionalExtension, params};

use crate::lease::Lease;
use crate::stmts::Q;
use crate::tx::Tx;

/// A queue's first entry: id, owner, ttl, wait deadline, heartbeat expiry.
pub(crate) type Head = (String, String, i64, i64, i64);

/// A lease-time µs reading as the kit's timestamp (ns).
pub(crate) fn ts(us: i64) -> Timestamp {
    Timestamp::from_nanos(u64::try_from(us).unwrap_or(0).saturating_mul(1000))
}

/// A timestamp (ns) as lease-time µs (rounded up: a deadline is never moved earlier).
pub(crate) fn us(t: Timestamp) -> i64 {
    i64::try_from(t.as_nanos().div_ceil(1000)).unwrap_or(i64::MAX)
}

pub(crate) fn token_u64(token: i64) -> u64 {
    u64::try_from(token).unwrap_or(0)
}

impl Tx<'_, '_> {
    /// The lease row of `name`, from the table.
    pub(crate) fn read_lease(&self, name: &str) -> rusqlite::Result<Option<Lease>> {
        self.st
            .get(Q::LeaseGet)?
            .query_row([name], |r| {
                Ok(Lease {
                    owner: r.get(0)?,
                    token: r.get(1)?,
                    deadline: r.get(2)?,
                    req: r.get(4)?,
                    claimed: r.get(5)?,
                })
            })
            .optional()
    }

    pub(crate) fn delete_lease(&self, name: &str) -> rusqlite::Result<()> {
        self.st.get(Q::LeaseDel)?.execute([name])?;
        Ok(())
    }

    pub(crate) fn waiter_alive(&self, id: &str) -> rusqlite::Result<bool> {
        self.st.get(Q::WaiterAlive)?.exists(params![id, self.raw])
    }

    pub(crate) fn delete_waiter(&self, id: &str) -> rusqlite::Result<()> {
        self.st.get(Q::WaiterDel)?.execute([id])?;
        Ok(())
    }

    pub(crate) fn claim(&self, name: &str) -> rusqlite::Result<()> {
        self.st.get(Q::LeaseClaim)?.execute([name])?;
        Ok(())
    }

    /// The first queued waiter of `name` (not handed a lease): id, owner, ttl, wd, hb.
    pub(crate) fn head(&self, name: &str) -> rusqlite::Result<Option<Head>> {
        self.st
            .get(Q::Head)?
            .query_row([name], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .optional()
    }

    /// Whether lease `r` is live now (see the module docs).
    pub(crate) fn live(&self, r: &Lease) -> rusqlite::Result<bool> {
        if r.owner.is_none() || self.now >= r.deadline {
            return Ok(false);
        }
        if r.claimed {
            return Ok(true);
        }
        self.waiter_alive(r.req.as_deref().unwrap_or(""))
    }

    /// Grants `name` to `owner` for `ttl` µs on behalf of request `req`, with a new token.
    pub(crate) fn grant(
        &mut self,
        name: &str,
        owner: &str,
        ttl: i64,
        req: &str,
        claimed: bool,
    ) -> rusqlite::Result<Lease> {
        let token = self.next_token()?;
        let deadline = self.now.saturating_add(ttl);
        self.st
            .get(Q::LeasePut)?
            .execute(params![name, owner, token, deadline, ttl, req, claimed])?;
        Ok(Lease {
            owner: Some(owner.to_owned()),
            token,
            deadline,
            req: Some(req.to_owned()),
            claimed,
        })
    }

    /// [`grant`](Self::grant) (picked up) as the operation's last write: the lease row and
    /// the state row in one statement (see [`Tx::put_lease_last`]).
    pub(crate) fn grant_last(
        &mut self,
        name: &str,
        owner: &str,
        ttl: i64,
        req: &str,
    ) -> rusqlite::Result<Lease> {
        let token = self.next_token()?;
        let lease = Lease {
            owner: Some(owner.to_owned()),
            token,
            deadline: self.now.saturating_add(ttl),
            req: Some(req.to_owned()),
            claimed: true,
        };
        self.put_lease_last(name, &lease, ttl)?;
        Ok(lease)
    }

    /// The lease of `name` is free: hands it to the first live waiter (deleting dead ones on
    /// the way) and rings its bell. `None` when nobody waits.
    pub(crate) fn hand_off(&mut self, name: &str) -> rusqlite::Result<Option<Lease>> {
        while let Some((id, owner, ttl, wd, hb)) = self.head(name)? {
            if hb > self.raw && (wd == 0 || self.now < wd) {
                let lease = self.grant(name, &owner, ttl, &id, false)?;
                self.st
                    .get(Q::WaiterGrant)?
                    .execute(params![id, lease.token, lease.deadline])?;
                self.ring(&id)?;
                return Ok(Some(lease));
            }
            self.delete_waiter(&id)?;
        }
        Ok(None)
    }

    /// Brings `name` (row `r`) up to date: a live lease stays; otherwise the name goes to the
    /// first live waiter. The entry of a waiter that died holding an unclaimed hand-off is
    /// deleted. The live lease, or `None` when the name is free and nobody waits.
    pub(crate) fn settle(
        &mut self,
        name: &str,
        r: Option<Lease>,
    ) -> rusqlite::Result<Option<Lease>> {
        if let Some(r) = r {
            if r.owner.is_some() && !r.claimed {
                let req = r.req.clone().unwrap_or_default();
                if self.now < r.deadline && self.waiter_alive(&req)? {
                    return Ok(Some(r));
                }
                self.st
                    .get(Q::WaiterDelDead)?
                    .execute(params![req, self.raw])?;
            } else if r.owner.is_some() && self.now < r.deadline {
                return Ok(Some(r));
            }
        }
        self.hand_off(name)
    }

    /// Writes the outcome of a settle: no live lease and nobody waiting deletes the row.
    pub(crate) fn store_settled(&self, name: &str, cur: &Option<Lease>) -> rusqlite::Result<()> {
        if cur.is_none() {
            self.delete_lease(name)?;
        }
        Ok(())
    }

    /// Waiter `id` leaves the queue of `name`; the name is settled; if `id` was first, the
    /// new first waiter is told (so that it sleeps to the holder's deadline).
    pub(crate) fn leave(
        &mut self,
        name: &str,
        id: &str,
        r: Option<Lease>,
    ) -> rusqlite::Result<Option<Lease>> {
        let head = self.head(name)?.map(|h| h.0);
        self.delete_waiter(id)?;
        let cur = self.settle(name, r)?;
        if head.as_deref() == Some(id) && cur.is_some() {
            if let Some((next, ..)) = self.head(name)? {
                self.ring(&next)?;
            }
        }
        Ok(cur)
    }
}

pub(crate) fn grant_of(lease: &Lease) -> Grant {
    Grant {
        token: token_u64(lease.token),
        deadline: ts(lease.deadline),
    }
}

pub(crate) fn info(name: &str, lease: &Lease) -> LeaseInfo {
    LeaseInfo::new(
        name,
        lease.owner.as_deref().unwrap_or(""),
        token_u64(lease.token),
        ts(lease.deadline),
    )
}
