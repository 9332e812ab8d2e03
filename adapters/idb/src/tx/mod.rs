//! The engine's "server side": the IndexedDB schema and the body of every transaction.
//!
//! # Schema (database version 1)
//! - Object store `locks`, key path `name`: one row per name with a lease or waiters,
//!   `{ name, lease?: { owner, token, deadline, ttl, grantee, claimed, pickupBy },
//!   queue: [{ id, owner, ttl, waitUntil, heartbeatUntil }] }`. A row with neither is deleted.
//! - Object store `meta`, key path `key`: `{ key: "token", value }`, the last fencing token;
//!   `{ key: "floor", value }`, the latest time any transaction decided at; in test builds
//!   `{ key: "offset", value }`, the test clock's offset.
//!
//! Times are µs since the Unix epoch, durations µs, all exact integers in an `f64`.
//!
//! # One transaction per operation
//! Every operation is one `readwrite` transaction over both stores. It reads the name's row
//! and the `meta` rows (two requests sent together), then, in the success handler of the
//! second, decides synchronously with a body from [`ops`] and writes what changed. IndexedDB
//! runs overlapping `readwrite` transactions one at a time, across every tab and worker of
//! the origin, so read-decide-write is atomic. Nothing in a body awaits anything: a context
//! that stalled inside a transaction would stall every context of the origin.

pub(crate) mod ops;
pub(crate) mod row;

#[cfg(test)]
mod tests;
