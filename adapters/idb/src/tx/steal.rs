//! `steal`: Web Locks' `steal: true` in one transaction. The live lease ends (its holder is
//! told, over the `BroadcastChannel`, wherever it runs) and the thief is granted the name in
//! the same transaction, ahead of the queue, so that no third party can take it in between.
//!
//! A hand-off that its waiter has not picked up yet is not a holder: that waiter goes back
//! to the head of the queue with its place in the request order, and is served after the
//! thief (unless the queue is full meanwhile: it then joins the back at its next step, or is
//! refused as any waiter arriving at a full queue).

use super::ops::{Ctx, Granted, Notice, grant, prune};
use super::row::{Lease, MAX_QUEUE, Row, Ticket};

/// What a steal did: the thief's grant, and the holder's lease it ended (if any).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stolen {
    pub(crate) granted: Granted,
    pub(crate) ended: Option<Lease>,
}

/// Takes `name` for `owner` for `ttl` µs, whoever holds it; `rid` is the request's id (the
/// grantee, so that a dropped call gives the lease back).
pub(crate) fn steal(
    row: &mut Row,
    cx: &mut Ctx<'_>,
    name: &str,
    owner: &str,
    ttl: u64,
    rid: &str,
) -> Stolen {
    // Settle without handing the name on: it goes to the thief.
    if let Some(lease) = &row.lease {
        if !cx.live(lease) {
            if lease.claimed {
                cx.notices.push(Notice::Lapsed(lease.token));
            }
            row.lease = None;
        }
    }
    prune(row, cx);
    let ended = match row.lease.take() {
        Some(lease) if lease.claimed => {
            cx.notices.push(Notice::Ended(name.into()));
            Some(lease)
        }
        Some(handed) => {
            requeue(row, handed);
            None
        }
        None => None,
    };
    // Claimed at once, in this context.
    let me = cx.me;
    let granted = grant(row, cx, owner, ttl, rid, None, me);
    Stolen { granted, ended }
}

/// Puts the waiter an unclaimed hand-off was written for back at the head of the queue.
fn requeue(row: &mut Row, handed: Lease) {
    if row.queue.len() >= MAX_QUEUE {
        return;
    }
    let ticket = Ticket {
        id: handed.grantee,
        owner: handed.owner,
        ttl: handed.ttl,
        wait_until: 0,
        heartbeat_until: handed.pickup_by,
        ctx: handed.ctx,
        seq: handed.seq,
    };
    row.queue.insert(0, ticket);
}
