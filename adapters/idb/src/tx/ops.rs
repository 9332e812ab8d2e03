//! The transaction bodies: what each operation decides, given one name's row and the
//! database-wide rows, at one instant. Pure and synchronous: the IndexedDB layer reads the
//! rows, calls one of these inside the `readwrite` transaction, and writes back what changed.
//!
//! # The rules, in one place
//! - **Live** means `now < deadline`, and for a hand-off not yet picked up, also that its
//!   waiter's heartbeat has not expired (a waiter that went away never holds a name), and
//!   that the context it was granted in is not known dead ([`Ctx::is_dead`]: its presence
//!   Web Lock is gone). A ticket is alive while its heartbeat runs and its context is not
//!   known dead. Every lease and ticket records the id of the context that wrote it
//!   ([`Ctx::me`]); a record without one (an older row, a context without Web Locks) is
//!   ruled by its deadline and heartbeat alone.
//! - **Settling** a row comes first in every operation that writes: a lease that is no longer
//!   live is dropped (and its holder told, over the BroadcastChannel, wherever it runs), dead
//!   tickets (whose context stopped refreshing them, or whose wait is over) are dropped from
//!   anywhere in the queue, and a free name goes at once to the first live ticket. The
//!   handed-off lease is written for that waiter, unclaimed, and the waiter is woken over the
//!   BroadcastChannel after the transaction commits. A renewal drops dead tickets too, so a
//!   name held for long never carries the tickets of contexts that went away.
//! - **A context's waiters share their heartbeats**: a step refreshes every ticket of its
//!   context in the row, so a context with many waiters on one name needs one step per
//!   heartbeat, not one per waiter. A ticket whose waiter went away without withdrawing it
//!   (its withdrawal failed) lives while its context has other waiters there; handed the
//!   name, it lapses at its pickup time and passes on.
//! - **No barging**: a name is granted directly (try_lock, or an arriving acquire) only when,
//!   after settling, it has no lease; then its queue is empty too.
//! - **FIFO**: tickets join the back of the queue; hand-offs take the front. A waiter whose
//!   ticket was dropped (it looked dead) joins the back again when it comes back. A queue
//!   holds at most [`MAX_QUEUE`] tickets: a waiter arriving at a full one is refused.
//! - **Request order**: a ticket takes a number from the token counter when it joins a queue
//!   ([`Ticket::seq`](super::row::Ticket::seq)), so the tickets of every name sort in the
//!   order their requests were queued, in the order IndexedDB ran those transactions (within
//!   one context, the order the calls were made). A hand-off keeps its ticket's number.
//! - **Steal** ([`steal`](super::steal::steal)) ends the live lease (its holder told), and
//!   grants the name to the thief in the same transaction, ahead of the queue.
//! - **Tokens** are `max(last + 1, now)`: strictly increasing in the database, and still
//!   increasing after the database was deleted (site data cleared, storage evicted) as long as
//!   the clock did not step back by more than the time since. They are never repeated: a
//!   counter at [`MAX_EXACT`] refuses to grant (`Unavailable`) rather than hand out a token
//!   twice.
//! - **Release** compares the token and the owner, never touches a newer lease, and answers
//!   whether the lease was live; **renew** resets a live lease to `now + ttl`.
//! - **The clock** ([`Ctx::new`]): `now` is the latest of `Date.now()` (+ the test offset),
//!   the clock floor, and this context's own estimate (its last reading plus the monotonic
//!   time since), so that a clock stepping back in every context neither stalls leases nor
//!   hides a lost lease from its holder. A reading later than [`HORIZON`] is refused.
//! - **The clock floor** moves up to `now` in every transaction, and is written back when
//!   the token changes or when the transaction found something lapsed (a lease, a hand-off,
//!   a ticket or a wait whose time ran out): those are the decisions a clock that stepped
//!   back could contradict later. Finding a lease live needs no write (it was live at every
//!   earlier time too), and neither does deleting one. This saves a request in the common
//!   release.

#[cfg_attr(not(target_arch = "wasm32"), allow(unused_imports))]
pub(crate) use super::ctx::{Clocks, Ctx, Notice};
pub(crate) use super::look::{ahead, contexts, news, waiting};
use super::row::{Lease, MAX_QUEUE, Row, Ticket};

/// A granted lease, as a reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Granted {
    pub(crate) token: u64,
    pub(crate) deadline: u64,
}

/// Writes a new lease on `row` and returns it.
pub(crate) fn grant(
    row: &mut Row,
    cx: &mut Ctx<'_>,
    owner: &str,
    ttl: u64,
    grantee: &str,
    pickup_by: Option<u64>,
    ctx: &str,
) -> Granted {
    let token = cx.next_token();
    let deadline = cx.after(ttl);
    row.lease = Some(Lease {
        owner: owner.into(),
        token,
        deadline,
        ttl,
        grantee: grantee.into(),
        claimed: pickup_by.is_none(),
        pickup_by: pickup_by.unwrap_or(0),
        ctx: ctx.into(),
        seq: 0,
    });
    Granted { token, deadline }
}

/// Hands a free name to the first live ticket (dropping dead ones on the way) and wakes it.
fn hand_off(row: &mut Row, cx: &mut Ctx<'_>) {
    debug_assert!(row.lease.is_none());
    while !row.queue.is_empty() {
        let ticket = row.queue.remove(0);
        if cx.alive(&ticket) {
            grant(
                row,
                cx,
                &ticket.owner,
                ticket.ttl,
                &ticket.id,
                Some(ticket.heartbeat_until),
                &ticket.ctx,
            );
            if let Some(lease) = &mut row.lease {
                lease.seq = ticket.seq;
            }
            cx.notices.push(Notice::Waiter(ticket.id));
            return;
        }
    }
}

/// Brings the row up to date (see the module docs); `true` when a live lease holds it after.
pub(crate) fn settle(row: &mut Row, cx: &mut Ctx<'_>) -> bool {
    if let Some(lease) = &row.lease {
        if !cx.live(lease) {
            if lease.claimed {
                cx.notices.push(Notice::Lapsed(lease.token));
            }
            row.lease = None;
        }
    }
    prune(row, cx);
    if row.lease.is_some() {
        return true;
    }
    hand_off(row, cx);
    row.lease.is_some()
}

/// Drops every ticket that can no longer be served (its context stopped refreshing it, or
/// its wait is over), wherever it is in the queue; wakes the new head if the head went while
/// a lease holds the name (it should sleep to the holder's deadline).
pub(crate) fn prune(row: &mut Row, cx: &mut Ctx<'_>) {
    if row.queue.iter().all(|t| cx.servable(t)) {
        return;
    }
    cx.lapse_seen = true;
    let head_went = row.queue.first().is_some_and(|t| !cx.servable(t));
    row.queue.retain(|t| cx.servable(t));
    if head_went && row.lease.is_some() {
        poke_head(row, cx);
    }
}

/// Wakes the head of the queue, if any (it should re-read the holder's deadline).
fn poke_head(row: &Row, cx: &mut Ctx<'_>) {
    if let Some(head) = row.queue.first() {
        cx.notices.push(Notice::Waiter(head.id.clone()));
    }
}

/// `try_lock`: grants `owner` the name for `ttl` µs if, after settling, nobody holds it.
/// `Err(deadline)` (the holder's) when it is busy.
pub(crate) fn try_lock(
    row: &mut Row,
    cx: &mut Ctx<'_>,
    owner: &str,
    ttl: u64,
    rid: &str,
) -> Result<Granted, u64> {
    if settle(row, cx) {
        return Err(row.lease.as_ref().map_or(0, |l| l.deadline));
    }
    let me = cx.me;
    Ok(grant(row, cx, owner, ttl, rid, None, me))
}

/// One step of a waiting `acquire`.
#[derive(Clone, Debug)]
pub(crate) struct Step<'a> {
    pub(crate) id: &'a str,
    pub(crate) owner: &'a str,
    pub(crate) ttl: u64,
    /// The end of the wait on the engine's clock (0: none), fixed by the caller at its first
    /// poll, so that the wait counts from there even when the first step waits in a queue of
    /// transactions.
    pub(crate) wait_until: u64,
    /// How long the ticket stays alive without another step (µs of raw time).
    pub(crate) heartbeat: u64,
}

/// What a step answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stepped {
    /// Granted (directly, or a hand-off picked up now).
    Granted(Granted),
    /// The wait is over without a grant (for a zero wait: the name was busy).
    Over,
    /// Still queued; `head_deadline` is the holder's deadline when this waiter is first in
    /// line.
    Queued { head_deadline: Option<u64> },
}

/// One step of `acquire`: picks up a lease handed to this waiter, or takes a free name, or
/// joins (or stays in) the queue and refreshes its heartbeat, or leaves once its wait is over.
pub(crate) fn step(row: &mut Row, cx: &mut Ctx<'_>, s: &Step<'_>) -> Stepped {
    let wait_until = s.wait_until;
    let over = wait_until != 0 && cx.now >= wait_until;
    cx.lapse_seen |= over;
    settle(row, cx);
    if let Some(lease) = &mut row.lease {
        if lease.grantee == s.id {
            // Handed to this waiter (still live: settle kept it): picked up from now on.
            lease.claimed = true;
            let granted = Granted {
                token: lease.token,
                deadline: lease.deadline,
            };
            poke_head(row, cx);
            return Stepped::Granted(granted);
        }
    }
    if let Some(pos) = row.ticket(s.id) {
        if over {
            row.queue.remove(pos);
            if pos == 0 {
                poke_head(row, cx);
            }
            return Stepped::Over;
        }
        row.queue[pos].heartbeat_until = cx.raw.saturating_add(s.heartbeat);
        if row.queue[pos].ctx != cx.me {
            row.queue[pos].ctx = cx.me.into();
        }
        refresh_mine(row, cx, s.heartbeat);
        let head_deadline = (pos == 0).then(|| row.lease.as_ref().map_or(0, |l| l.deadline));
        return Stepped::Queued { head_deadline };
    }
    // A new arrival, or a waiter whose ticket was dropped while it looked dead: the back.
    if row.lease.is_none() {
        let me = cx.me;
        return Stepped::Granted(grant(row, cx, s.owner, s.ttl, s.id, None, me));
    }
    if over {
        return Stepped::Over;
    }
    if row.queue.len() >= MAX_QUEUE {
        cx.refuse(format!(
            "{MAX_QUEUE} waiters already queue for this lock (the most a name's queue holds)"
        ));
        return Stepped::Over;
    }
    let seq = cx.next_seq();
    row.queue.push(Ticket {
        id: s.id.into(),
        owner: s.owner.into(),
        ttl: s.ttl,
        wait_until,
        heartbeat_until: cx.raw.saturating_add(s.heartbeat),
        ctx: cx.me.into(),
        seq,
    });
    refresh_mine(row, cx, s.heartbeat);
    let head_deadline =
        (row.queue.len() == 1).then(|| row.lease.as_ref().map_or(0, |l| l.deadline));
    Stepped::Queued { head_deadline }
}

/// Refreshes the heartbeat of every ticket of this context in the row (not of an unknown
/// one): one step shows all of this context's waiters on the name alive, so they need not
/// each step every heartbeat (see `acquire.rs`). Never shortens one.
fn refresh_mine(row: &mut Row, cx: &Ctx<'_>, heartbeat: u64) {
    if cx.me.is_empty() {
        return;
    }
    let until = cx.raw.saturating_add(heartbeat);
    for t in row.queue.iter_mut().filter(|t| t.ctx == cx.me) {
        t.heartbeat_until = t.heartbeat_until.max(until);
    }
}

/// A waiting `acquire` (or a `try_lock`) that will never pick up its answer: its ticket
/// leaves the queue, and a lease granted to it (handed over, or granted in a reply nobody
/// read) ends and goes on to the next waiter.
pub(crate) fn cancel(row: &mut Row, cx: &mut Ctx<'_>, id: &str) {
    if let Some(pos) = row.ticket(id) {
        row.queue.remove(pos);
        if pos == 0 && row.lease.is_some() {
            poke_head(row, cx);
        }
    }
    if row.lease.as_ref().is_some_and(|l| l.grantee == id) {
        row.lease = None;
    }
    settle(row, cx);
}

/// `release`: `true` when the lease granted with `token` to `owner` was live and is now
/// free (or handed on).
pub(crate) fn release(row: &mut Row, cx: &mut Ctx<'_>, token: u64, owner: &str) -> bool {
    match &row.lease {
        Some(lease) if lease.is(token, owner) => {
            let live = cx.live(lease);
            row.lease = None;
            prune(row, cx);
            hand_off(row, cx);
            live
        }
        _ => {
            settle(row, cx);
            false
        }
    }
}

/// `renew`: the new deadline, or `Err(())` when the lease granted with `token` to `owner` is
/// not live. Drops dead tickets on the way (a name held for long keeps its row small).
pub(crate) fn renew(
    row: &mut Row,
    cx: &mut Ctx<'_>,
    token: u64,
    owner: &str,
    ttl: u64,
) -> Result<u64, ()> {
    let deadline = cx.after(ttl);
    if let Some(lease) = &mut row.lease {
        if lease.is(token, owner) && cx.holds(lease) {
            lease.deadline = deadline;
            lease.ttl = ttl;
            prune(row, cx);
            return Ok(deadline);
        }
    }
    settle(row, cx);
    Err(())
}

/// `is_held`: the deadline of the lease granted with `token` to `owner` if it is live.
/// Changes nothing.
pub(crate) fn is_held(row: &Row, cx: &mut Ctx<'_>, token: u64, owner: &str) -> Option<u64> {
    let lease = row.lease.as_ref().filter(|l| l.is(token, owner))?;
    cx.live(lease).then_some(lease.deadline)
}

/// `holder`: the live lease after settling.
pub(crate) fn holder(row: &mut Row, cx: &mut Ctx<'_>) -> Option<Lease> {
    settle(row, cx);
    row.lease.clone()
}

/// `force_release`: ends the live lease whoever holds it, hands the name on, and returns the
/// lease it ended.
pub(crate) fn force_release(row: &mut Row, cx: &mut Ctx<'_>, name: &str) -> Option<Lease> {
    if !settle(row, cx) {
        return None;
    }
    let ended = row.lease.take();
    cx.notices.push(Notice::Ended(name.into()));
    hand_off(row, cx);
    ended
}
