//! What a settled row tells: its live waiters (for a listing), and, for a waiter of this
//! context, the contexts it waits behind and the news of its siblings.

use super::ctx::Ctx;
use super::row::{Row, Ticket};

/// The live waiters of a settled row, in the order they will be served.
pub(crate) fn waiting<'r>(row: &'r Row, cx: &'r Ctx<'_>) -> impl Iterator<Item = &'r Ticket> + 'r {
    row.queue.iter().filter(move |t| cx.servable(t))
}

/// The contexts that stand before waiter `id` on a settled row: the lease's (holder or
/// grantee) and those of the tickets ahead of it, each once, without this context's or any
/// known dead or unknown (empty). When one of them dies the waiter should look again: it may
/// be next, or the lease free.
pub(crate) fn ahead(row: &Row, cx: &Ctx<'_>, id: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    let lease = row.lease.iter().map(|l| l.ctx.as_str());
    let tickets = row
        .queue
        .iter()
        .take_while(|t| t.id != id)
        .map(|t| t.ctx.as_str());
    for ctx in lease.chain(tickets) {
        if !ctx.is_empty() && ctx != cx.me && !cx.is_dead(ctx) && !ids.iter().any(|c| c == ctx) {
            ids.push(ctx.into());
        }
    }
    ids
}

/// Every context id a row records (its lease's and its tickets'), for a liveness check.
pub(crate) fn contexts<'r>(row: &'r Row) -> impl Iterator<Item = &'r str> + 'r {
    let lease = row.lease.iter().map(|l| l.ctx.as_str());
    lease
        .chain(row.queue.iter().map(|t| t.ctx.as_str()))
        .filter(|c| !c.is_empty())
}

/// The waiters of this context (other than `id`) that should look at the row now: the one an
/// unclaimed hand-off was written for, and the head of the queue. A step tells them locally,
/// so that a waiter that leaves its heartbeats to its siblings still learns its news when a
/// message was lost.
pub(crate) fn news(row: &Row, cx: &Ctx<'_>, id: &str) -> Vec<String> {
    if cx.me.is_empty() {
        return Vec::new();
    }
    let handed = row
        .lease
        .iter()
        .filter(|l| !l.claimed && l.ctx == cx.me)
        .map(|l| l.grantee.as_str());
    let head = row
        .queue
        .first()
        .filter(|t| t.ctx == cx.me)
        .map(|t| t.id.as_str());
    handed
        .chain(head)
        .filter(|other| *other != id)
        .map(String::from)
        .collect()
}
