//! The engine's "server side": the IndexedDB schema and the body of every transaction.
//!
//! # Schema (any database version that has these two stores)
//! - Object store `locks`, key path `name`: one row per name with a lease or waiters,
//!   `{ name, lease?: { owner, token, deadline, ttl, grantee, claimed, pickupBy, ctx?, seq? },
//!   queue: [{ id, owner, ttl, waitUntil, heartbeatUntil, ctx?, seq? }] }`. A row with neither
//!   is deleted. `ctx` (the writer's context id) and `seq` (a ticket's place in the request
//!   order) are left out when empty or 0, and read as such when missing (older rows).
//! - Object store `meta`, key path `key`, one row: `{ key: "clock", token, floor, offset? }`:
//!   the counter (the last fencing token or ticket number handed out) and the clock floor (the latest time
//!   any transaction decided at; no transaction decides earlier), and in test builds the test
//!   clock's offset. They share one row on purpose: every transaction reads the floor and
//!   most write it, and in Chromium each extra request costs about as much as a tenth of a
//!   transaction (measured: separate counter and floor rows made a try_lock + release cycle
//!   1.36x a hand-written one; one row, 1.0x).
//!
//! Times are µs since the Unix epoch, durations µs, all exact integers in an `f64`. A queue
//! holds at most [`row::MAX_QUEUE`] tickets; a row with more was not written by this crate.
//!
//! # One transaction per operation
//! Every operation is one `readwrite` transaction over both stores. It reads the name's row
//! and the `clock` row (two requests sent together), then, in the success handler of the
//! second, decides synchronously with a body from [`ops`] and writes what changed. IndexedDB
//! runs overlapping `readwrite` transactions one at a time, across every tab and worker of
//! the origin, so read-decide-write is atomic. Nothing in a body awaits anything: a context
//! that stalled inside a transaction would stall every context of the origin.

pub(crate) mod ctx;
pub(crate) mod look;
pub(crate) mod ops;
pub(crate) mod row;
pub(crate) mod steal;

#[cfg(test)]
mod tests;
