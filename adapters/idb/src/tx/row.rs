//! The rows the transaction bodies read and write, as plain Rust values.
//!
//! Times are microseconds since the Unix epoch on the engine's clock (`Date.now()` plus the
//! test offset, never behind the clock-floor row), and durations are microseconds: every
//! number stays an exact integer in a JavaScript `f64` (below 2^53, the year 2255).

/// The largest number a row may hold: 2^53 - 1, exact in a JavaScript `f64`.
pub(crate) const MAX_EXACT: u64 = (1 << 53) - 1;

/// The longest lease, in µs: 100 years (longer ttls, up to `Duration::MAX`, are cut to it).
pub(crate) const MAX_TTL_US: u64 = 100 * 365 * 24 * 3600 * 1_000_000;

/// The latest time a transaction decides at: 100 years (the longest ttl) before
/// [`MAX_EXACT`], early in the year 2155. A clock that reads later is refused (the
/// transaction answers `Unavailable` and writes nothing), so that `now + ttl` always fits a
/// row and a clock far ahead in one context cannot pin the whole database to the ceiling.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub(crate) const HORIZON: u64 = MAX_EXACT - MAX_TTL_US;

/// The most tickets a name's queue holds. A waiter arriving at a full queue is refused with
/// `Unavailable`; a row holding more was not written by this crate. Every heartbeat rewrites
/// the row, so a queue this long is already slow (each ticket costs about 40 µs per
/// transaction in Chromium).
pub(crate) const MAX_QUEUE: usize = 256;

/// The live or lapsed lease of a name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Lease {
    /// Who holds it.
    pub(crate) owner: String,
    /// Its fencing token.
    pub(crate) token: u64,
    /// Live while the engine's now is before it.
    pub(crate) deadline: u64,
    /// The ttl of its last grant or renew.
    pub(crate) ttl: u64,
    /// The ticket id of the waiter it was handed to (empty for a direct grant).
    pub(crate) grantee: String,
    /// `false` for a hand-off its waiter has not picked up yet.
    pub(crate) claimed: bool,
    /// For a hand-off not picked up: the grantee's heartbeat expiry (raw time). A waiter
    /// that died before picking its lease up leaves it to lapse then, not at its deadline.
    pub(crate) pickup_by: u64,
    /// The id of the context it was granted in (its holder's, or for a hand-off its
    /// waiter's): once that context's presence Web Lock is gone (the context is dead), the
    /// lease is over whatever its deadline. Empty: no liveness known (a context without Web
    /// Locks, or a row written before this field existed); the deadline alone rules.
    pub(crate) ctx: String,
    /// For a hand-off not picked up: its ticket's [`Ticket::seq`], so that a steal that
    /// puts the waiter back in line keeps its place in the request order (0 otherwise).
    pub(crate) seq: u64,
}

impl Lease {
    /// Whether the lease is live at `now` (lease time) / `raw` (wall time, no test offset).
    pub(crate) fn live(&self, now: u64, raw: u64) -> bool {
        now < self.deadline && (self.claimed || raw < self.pickup_by)
    }

    /// Whether this is the lease granted with `token` to `owner`.
    pub(crate) fn is(&self, token: u64, owner: &str) -> bool {
        self.token == token && self.owner == owner
    }
}

/// A waiter's place in a name's queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Ticket {
    /// The waiting `acquire`'s unique id.
    pub(crate) id: String,
    /// The owner it asks the lease for.
    pub(crate) owner: String,
    /// The ttl it asks for.
    pub(crate) ttl: u64,
    /// The end of its wait on lease time; 0 for an unbounded wait.
    pub(crate) wait_until: u64,
    /// Its heartbeat expiry on raw time: a ticket not refreshed by then belongs to a context
    /// that went away (a closed tab, a terminated worker) and is skipped.
    pub(crate) heartbeat_until: u64,
    /// The id of the waiting context (see [`Lease::ctx`]): a dead context's ticket is skipped
    /// at once, without waiting for its heartbeat to run out. Empty: the heartbeat alone rules.
    pub(crate) ctx: String,
    /// When the request joined a queue, as a number from the database's counter (the one
    /// fencing tokens come from): tickets of every name sort by it in the order their
    /// requests were first queued. 0 in a row written before this field existed.
    pub(crate) seq: u64,
}

impl Ticket {
    /// Whether the ticket may still be served: its context is alive and its wait not over.
    pub(crate) fn alive(&self, now: u64, raw: u64) -> bool {
        raw < self.heartbeat_until && (self.wait_until == 0 || now < self.wait_until)
    }
}

/// One name's row: its lease (if any) and its FIFO queue of waiters.
///
/// The queue lives in the name's own row, so that every operation on a name reads and
/// writes one row: its transaction then has the two steps of a hand-written lease cycle
/// (read, then write), whatever the queue holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Row {
    /// The lease, live or lapsed; `None` when free.
    pub(crate) lease: Option<Lease>,
    /// The waiters, in arrival order.
    pub(crate) queue: Vec<Ticket>,
}

impl Row {
    /// Whether the row holds nothing worth keeping (then it is deleted).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    pub(crate) fn is_empty(&self) -> bool {
        self.lease.is_none() && self.queue.is_empty()
    }

    /// The position of ticket `id`.
    pub(crate) fn ticket(&self, id: &str) -> Option<usize> {
        self.queue.iter().position(|t| t.id == id)
    }
}

/// The database-wide `clock` row: the token counter and the clock floor (and, in test builds,
/// the test clock's offset). The counter numbers grants (fencing tokens) and queued requests
/// ([`Ticket::seq`]) alike, so both strictly increase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Meta {
    /// The last number handed out: a fencing token or a ticket's `seq`.
    pub(crate) token: u64,
    /// The latest engine time any transaction decided at: no transaction decides earlier.
    pub(crate) floor: u64,
    /// The test clock's offset, added to `Date.now()` (zero outside test builds).
    pub(crate) offset: u64,
}
