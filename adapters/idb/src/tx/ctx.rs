//! One transaction's context: its view of time (the engine's clock, the horizon, the token
//! counter), and what it announces after it commits.

use std::collections::BTreeSet;

use super::row::{HORIZON, Lease, MAX_EXACT, Meta, Ticket};

/// Context ids known dead: their presence Web Lock is gone (see `js/presence.rs`). A dead
/// context never comes back (ids are never reused), so the set only grows.
pub(crate) type Dead = BTreeSet<String>;

/// No context known dead.
static NOBODY_DEAD: Dead = BTreeSet::new();

/// A message to post after the transaction commits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Notice {
    /// Waiter `id` should re-check: it was handed the lease, or became the head of its queue.
    Waiter(String),
    /// The live lease on this name was ended by somebody other than its holder.
    Ended(String),
    /// The lease with this fencing token was found lapsed and dropped (its holder, wherever
    /// it runs, should know: its clock may say it is still live).
    Lapsed(u64),
}

/// What this context knows of the time as a transaction decides.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Clocks {
    /// `Date.now()` in µs.
    pub(crate) date_now: u64,
    /// This context's own estimate of the engine's time: the time its last transaction
    /// decided at plus the monotonic time (`performance.now()`) elapsed since; 0 for none.
    pub(crate) anchored: u64,
    /// Whether the test clock's offset counts (builds with the `test-clock` feature).
    pub(crate) test_clock: bool,
}

/// About which year `us` (µs since the Unix epoch) falls in, for messages.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
fn year(us: u64) -> u64 {
    1970 + us / 31_556_952_000_000
}

/// One transaction's view of time, its database-wide rows and what it will announce.
#[derive(Debug)]
pub(crate) struct Ctx<'m> {
    /// The engine's time (see [`Ctx::new`]), never behind the floor.
    pub(crate) now: u64,
    /// Wall time without the test offset (heartbeats are on it).
    pub(crate) raw: u64,
    /// The token counter, clock floor and test offset; written back when changed.
    pub(crate) meta: &'m mut Meta,
    /// What to post after the commit.
    pub(crate) notices: Vec<Notice>,
    /// Whether a decision found a time run out (then the floor is written back).
    pub(crate) lapse_seen: bool,
    /// Why the transaction must not commit: it is then aborted (it changes nothing) and
    /// answers `Unavailable` with this reason.
    pub(crate) refused: Option<String>,
    /// This context's id, written into the leases it is granted and the tickets it queues
    /// (empty: no liveness info).
    pub(crate) me: &'m str,
    /// The contexts known dead: their leases are over and their tickets skipped.
    pub(crate) dead: &'m Dead,
}

impl<'m> Ctx<'m> {
    /// Reads the clock: the latest of `Date.now()` (+ the offset when `test_clock`), the
    /// floor and this context's anchored estimate; the floor then moves up to it. A time
    /// later than [`HORIZON`] is refused with the reason (nothing is decided at it).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    pub(crate) fn new(meta: &'m mut Meta, clocks: Clocks) -> Result<Self, String> {
        let offset = if clocks.test_clock { meta.offset } else { 0 };
        let read = clocks.date_now.saturating_add(offset);
        if read > HORIZON {
            return Err(format!(
                "this context's clock reads about the year {} (Date.now() far ahead): \
                 refusing to decide at a time later than 2155, which would stall every lease \
                 of the database",
                year(read)
            ));
        }
        if meta.floor > HORIZON {
            return Err(format!(
                "the database's clock floor is about the year {} (written by a clock far ahead, \
                 or not by alkstore-idb): delete the database to recover",
                year(meta.floor)
            ));
        }
        let now = read.max(meta.floor).max(clocks.anchored.min(HORIZON));
        meta.floor = now;
        Ok(Ctx {
            now,
            raw: now.saturating_sub(offset),
            meta,
            notices: Vec::new(),
            lapse_seen: false,
            refused: None,
            me: "",
            dead: &NOBODY_DEAD,
        })
    }

    /// The same, deciding as context `me` and knowing the contexts in `dead` dead.
    #[must_use]
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    pub(crate) fn with_contexts(mut self, me: &'m str, dead: &'m Dead) -> Self {
        self.me = me;
        self.dead = dead;
        self
    }

    /// Whether the context `ctx` is known dead (never this one, never an unknown one).
    pub(crate) fn is_dead(&self, ctx: &str) -> bool {
        !ctx.is_empty() && ctx != self.me && self.dead.contains(ctx)
    }

    /// Whether `ticket` may still be served now, without noting anything.
    pub(crate) fn servable(&self, ticket: &Ticket) -> bool {
        ticket.alive(self.now, self.raw) && !self.is_dead(&ticket.ctx)
    }

    /// Whether `lease` is live now, without noting anything.
    pub(crate) fn holds(&self, lease: &Lease) -> bool {
        lease.live(self.now, self.raw) && !self.is_dead(&lease.ctx)
    }

    /// Refuses the transaction with `why` (the first reason given wins).
    pub(crate) fn refuse(&mut self, why: impl Into<String>) {
        if self.refused.is_none() {
            self.refused = Some(why.into());
        }
    }

    /// Whether `lease` is live now; notes a lapse.
    pub(crate) fn live(&mut self, lease: &Lease) -> bool {
        let live = self.holds(lease);
        self.lapse_seen |= !live;
        live
    }

    /// Whether `ticket` may still be served now; notes a lapse.
    pub(crate) fn alive(&mut self, ticket: &Ticket) -> bool {
        let alive = self.servable(ticket);
        self.lapse_seen |= !alive;
        alive
    }

    /// The next fencing token, or a refusal when the counter is at its ceiling (a token is
    /// never handed out twice).
    pub(crate) fn next_token(&mut self) -> u64 {
        if self.meta.token >= MAX_EXACT {
            self.refuse(
                "the fencing-token counter is at its ceiling (2^53 - 1; written by a clock far \
                 ahead, or not by alkstore-idb): no token can be granted that is larger than \
                 every earlier one; delete the database to recover",
            );
            return MAX_EXACT;
        }
        // `now` is at most HORIZON, below MAX_EXACT: the token stays exact.
        let token = (self.meta.token + 1).max(self.now);
        self.meta.token = token;
        token
    }

    /// The next number of the request order, for a ticket joining a queue: from the token
    /// counter, so tokens and tickets never share a number (a refusal at the ceiling, as
    /// [`next_token`](Self::next_token)).
    pub(crate) fn next_seq(&mut self) -> u64 {
        self.next_token()
    }

    /// `now + us`, capped to what a row can hold.
    pub(crate) fn after(&self, us: u64) -> u64 {
        self.now.saturating_add(us).min(MAX_EXACT)
    }
}
