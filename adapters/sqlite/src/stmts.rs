//! [`Statements`]: the statements of the operations on one connection, each prepared on
//! its first use and kept for the connection's life.
//!
//! Kept by the caller that owns the connection (the store's connection thread, a clean-up
//! job) rather than looked up in rusqlite's statement cache: a lookup there hashes the whole
//! SQL text twice and copies it (about 4k instructions per operation), while a kept
//! statement is an index into an array.

use std::cell::{OnceCell, RefCell, RefMut};

use rusqlite::{Connection, PrepFlags, Statement};

use crate::schema::Sql;

/// A statement the operations run (see [`Sql`] for their text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Q {
    BeginTx,
    Commit,
    Rollback,
    Begin,
    StatePut,
    #[cfg_attr(not(feature = "test-clock"), allow(dead_code))]
    Offset,
    LeaseGet,
    LeasePut,
    LeaseStatePut,
    LeaseDel,
    LeaseFree,
    LeaseClaim,
    LeaseRenew,
    Head,
    AnyWaiter,
    WaiterGet,
    WaiterAdd,
    WaiterDel,
    WaiterDelDead,
    WaiterAlive,
    WaiterGrant,
    WaiterRequeue,
    WaiterUnclaim,
    MinArrival,
    WaiterHb,
    CancelledAdd,
    CancelledPrune,
    BellAdd,
    BellPrune,
    SnapLeases,
    SnapWaiters,
    #[cfg_attr(not(feature = "test-clock"), allow(dead_code))]
    Advance,
}

/// How many statements [`Q`] names.
const COUNT: usize = Q::Advance as usize + 1;

impl Sql {
    /// The text of statement `q`.
    fn text(&self, q: Q) -> &str {
        match q {
            Q::BeginTx => "BEGIN IMMEDIATE",
            Q::Commit => "COMMIT",
            Q::Rollback => "ROLLBACK",
            Q::Begin => &self.begin,
            Q::StatePut => &self.state_put,
            Q::Offset => &self.offset,
            Q::LeaseGet => &self.lease_get,
            Q::LeasePut => &self.lease_put,
            Q::LeaseStatePut => &self.lease_state_put,
            Q::LeaseDel => &self.lease_del,
            Q::LeaseFree => &self.lease_free,
            Q::LeaseClaim => &self.lease_claim,
            Q::LeaseRenew => &self.lease_renew,
            Q::Head => &self.head,
            Q::AnyWaiter => &self.any_waiter,
            Q::WaiterGet => &self.waiter_get,
            Q::WaiterAdd => &self.waiter_add,
            Q::WaiterDel => &self.waiter_del,
            Q::WaiterDelDead => &self.waiter_del_dead,
            Q::WaiterAlive => &self.waiter_alive,
            Q::WaiterGrant => &self.waiter_grant,
            Q::WaiterRequeue => &self.waiter_requeue,
            Q::WaiterUnclaim => &self.waiter_unclaim,
            Q::MinArrival => &self.min_arrival,
            Q::WaiterHb => &self.waiter_hb,
            Q::CancelledAdd => &self.cancelled_add,
            Q::CancelledPrune => &self.cancelled_prune,
            Q::BellAdd => &self.bell_add,
            Q::BellPrune => &self.bell_prune,
            Q::SnapLeases => &self.snap_leases,
            Q::SnapWaiters => &self.snap_waiters,
            Q::Advance => &self.advance,
        }
    }
}

/// The statements of one connection, prepared on first use.
pub(crate) struct Statements<'c> {
    pub(crate) conn: &'c Connection,
    sql: &'c Sql,
    kept: [OnceCell<RefCell<Statement<'c>>>; COUNT],
}

impl std::fmt::Debug for Statements<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Statements").finish_non_exhaustive()
    }
}

impl<'c> Statements<'c> {
    /// None prepared yet, for `conn` with the namespace's `sql`.
    pub(crate) fn new(conn: &'c Connection, sql: &'c Sql) -> Self {
        Statements {
            conn,
            sql,
            kept: std::array::from_fn(|_| OnceCell::new()),
        }
    }

    /// Statement `q`, prepared the first time. Its bindings are whatever its last run left:
    /// every caller binds every parameter. (rusqlite resets a statement after `execute`
    /// and when the rows of a query are dropped, so a kept statement holds no read lock.)
    ///
    /// # Errors
    /// SQLite's, when preparing fails; `SQLITE_MISUSE` when `q` is in use by a caller
    /// further up (a bug: never two runs of one statement at once).
    pub(crate) fn get(&self, q: Q) -> rusqlite::Result<RefMut<'_, Statement<'c>>> {
        let cell = &self.kept[q as usize];
        let kept = match cell.get() {
            Some(kept) => kept,
            None => {
                let st = self
                    .conn
                    .prepare_with_flags(self.sql.text(q), PrepFlags::SQLITE_PREPARE_PERSISTENT)?;
                cell.get_or_init(|| RefCell::new(st))
            }
        };
        kept.try_borrow_mut().map_err(|_| {
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_MISUSE),
                Some(format!(
                    "alkstore-sqlite: statement {q:?} run twice at once"
                )),
            )
        })
    }

    /// Runs `q`, which returns no rows and takes no parameters (`BEGIN IMMEDIATE`,
    /// `COMMIT`, `ROLLBACK`).
    pub(crate) fn run(&self, q: Q) -> rusqlite::Result<()> {
        self.get(q)?.execute([]).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_statement_prepares_on_the_schema_and_one_cannot_run_twice_at_once() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(&crate::schema::SCHEMA.replace('@', "ns"))
            .unwrap();
        let sql = Sql::new("ns");
        let st = Statements::new(&conn, &sql);
        for q in ALL {
            drop(st.get(q).unwrap_or_else(|e| panic!("{q:?}: {e}")));
        }
        let held = st.get(Q::Begin).unwrap();
        assert!(
            st.get(Q::Begin).is_err(),
            "a second run while one is under way"
        );
        drop(held);
        assert!(st.get(Q::Begin).is_ok());
    }

    const ALL: [Q; COUNT] = [
        Q::BeginTx,
        Q::Commit,
        Q::Rollback,
        Q::Begin,
        Q::StatePut,
        Q::Offset,
        Q::LeaseGet,
        Q::LeasePut,
        Q::LeaseStatePut,
        Q::LeaseDel,
        Q::LeaseFree,
        Q::LeaseClaim,
        Q::LeaseRenew,
        Q::Head,
        Q::AnyWaiter,
        Q::WaiterGet,
        Q::WaiterAdd,
        Q::WaiterDel,
        Q::WaiterDelDead,
        Q::WaiterAlive,
        Q::WaiterGrant,
        Q::WaiterRequeue,
        Q::WaiterUnclaim,
        Q::MinArrival,
        Q::WaiterHb,
        Q::CancelledAdd,
        Q::CancelledPrune,
        Q::BellAdd,
        Q::BellPrune,
        Q::SnapLeases,
        Q::SnapWaiters,
        Q::Advance,
    ];
}
