//! [`Tx`]: one operation's transaction, begun by [`Db::write`](crate::db::Db::write): the
//! state row (clock floor, counters) and the operation's lease row read in one statement,
//! the lease clock, the counters handed out, the bells rung, and the state written back.

use rusqlite::{Connection, params};

use crate::busy::wall_us;
use crate::lease::Lease;
use crate::stmts::{Q, Statements};

/// One operation's transaction: the statements, the lease clock, the state row.
pub(crate) struct Tx<'a, 'c> {
    pub(crate) st: &'a Statements<'c>,
    /// Lease time (µs): the wall clock (plus the test offset) raised to the floor.
    pub(crate) now: i64,
    /// The raw wall clock (µs): heartbeats.
    pub(crate) raw: i64,
    floor: i64,
    /// The last token handed out in the namespace.
    token: i64,
    /// The last arrival number.
    arrival: i64,
    /// The counters as read: the state row is written back only when something moved.
    read: (i64, i64),
    pub(crate) rang: bool,
    /// Set by an operation whose outcome lease time cannot change afterwards (a holder
    /// ending its own lease with nobody waiting): the floor need not move for it.
    pub(crate) timeless: bool,
    /// The name the operation is about, and its lease row and whether anyone waits for it
    /// as read with the state row: taken by the operation's first look at that name.
    first: Option<(&'a str, Option<Lease>, bool)>,
    /// Whether the operation's request id (the `rid` given to [`begin`](Self::begin)) was
    /// withdrawn before this transaction (it is in the cancelled table): then it must grant
    /// nothing.
    pub(crate) cancelled: bool,
}

impl<'a, 'c> Tx<'a, 'c> {
    /// Reads the state row, the lease row of `name`, whether anyone waits for it and whether
    /// request `rid` (`""` for none) was withdrawn (one statement), and the clock.
    pub(crate) fn begin(
        st: &'a Statements<'c>,
        name: &'a str,
        rid: &str,
    ) -> rusqlite::Result<Self> {
        let (floor, token, arrival, lease, waiting, cancelled) =
            st.get(Q::Begin)?.query_row([name, rid], |r| {
                let owner: Option<String> = r.get(3)?;
                let lease = match r.get::<_, Option<i64>>(4)? {
                    Some(token) => Some(Lease {
                        owner,
                        token,
                        deadline: r.get(5)?,
                        req: r.get(6)?,
                        claimed: r.get(7)?,
                    }),
                    None => None,
                };
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, lease, r.get(8)?, r.get(9)?))
            })?;
        let raw = wall_us();
        let clock = raw.saturating_add(st.test_offset()?);
        Ok(Tx {
            st,
            now: clock.max(floor),
            raw,
            floor,
            token,
            arrival,
            read: (token, arrival),
            rang: false,
            timeless: false,
            first: Some((name, lease, waiting)),
            cancelled,
        })
    }

    /// The lease row of `name` and whether anyone waits for it: as read by
    /// [`begin`](Self::begin) the first time, from the tables after that.
    pub(crate) fn lease_and_waiting(
        &mut self,
        name: &str,
    ) -> rusqlite::Result<(Option<Lease>, bool)> {
        match self.first.take() {
            Some((first, lease, waiting)) if first == name => Ok((lease, waiting)),
            _ => {
                let lease = self.lease(name)?;
                let waiting = self.st.get(Q::AnyWaiter)?.exists([name])?;
                Ok((lease, waiting))
            }
        }
    }

    /// The lease row of `name`: as read by [`begin`](Self::begin) the first time, from the
    /// table after that.
    pub(crate) fn lease(&mut self, name: &str) -> rusqlite::Result<Option<Lease>> {
        match self.first.take() {
            Some((first, lease, _)) if first == name => Ok(lease),
            _ => self.read_lease(name),
        }
    }

    /// Writes the state row back when it moved: the floor follows lease time (unless the
    /// operation was [`timeless`](Self::timeless)), the counters what was handed out.
    pub(crate) fn finish(&self) -> rusqlite::Result<()> {
        let floor = self.floor_to_write();
        if floor != self.floor || (self.token, self.arrival) != self.read {
            self.st
                .get(Q::StatePut)?
                .execute(params![floor, self.token, self.arrival])?;
        }
        Ok(())
    }

    /// The floor [`finish`](Self::finish) writes.
    fn floor_to_write(&self) -> i64 {
        if self.timeless {
            self.floor
        } else {
            self.now.max(self.floor)
        }
    }

    /// Writes lease row `lease` of `name` and the state row in one statement, as the
    /// operation's last write: [`finish`](Self::finish) then has nothing left to write
    /// (nothing may hand out a token or an arrival number after it).
    pub(crate) fn put_lease_last(
        &mut self,
        name: &str,
        lease: &Lease,
        ttl: i64,
    ) -> rusqlite::Result<()> {
        let floor = self.floor_to_write();
        self.st.get(Q::LeaseStatePut)?.execute(params![
            name,
            lease.owner,
            lease.token,
            lease.deadline,
            ttl,
            lease.req,
            lease.claimed,
            self.token,
            floor,
            self.arrival
        ])?;
        self.floor = floor;
        self.read = (self.token, self.arrival);
        Ok(())
    }

    /// The next fencing token: `max(last + 1, now)`, so tokens keep growing with the clock
    /// even if the counter's last commits were lost (see [`Synchronous`](crate::Synchronous)).
    /// A counter at `i64::MAX` (a corrupted file, or a clock some 290,000 years ahead) is an
    /// error, never a wrap to a smaller token.
    pub(crate) fn next_token(&mut self) -> rusqlite::Result<i64> {
        let next = self.token.checked_add(1).ok_or_else(|| {
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
                Some("alkstore-sqlite: the token counter is exhausted (at i64::MAX)".into()),
            )
        })?;
        self.token = next.max(self.now);
        Ok(self.token)
    }

    /// The next arrival number (FIFO order of waiters).
    pub(crate) fn next_arrival(&mut self) -> i64 {
        self.arrival += 1;
        self.arrival
    }

    /// Rings the bell for `id` (a waiter's id, or `*`): every process's listener delivers it.
    pub(crate) fn ring(&mut self, id: &str) -> rusqlite::Result<()> {
        self.st.get(Q::BellAdd)?.execute([id])?;
        let seq = self.st.conn.last_insert_rowid();
        if seq % 100 == 0 {
            self.st.get(Q::BellPrune)?.execute([seq - 1000])?;
        }
        self.rang = true;
        Ok(())
    }
}

impl Statements<'_> {
    /// The test clock's offset (µs), in builds with the `test-clock` feature; 0 in others.
    fn test_offset(&self) -> rusqlite::Result<i64> {
        #[cfg(feature = "test-clock")]
        return self.get(Q::Offset)?.query_row([], |r| r.get(0));
        #[cfg(not(feature = "test-clock"))]
        Ok(0)
    }
}

/// The test clock's offset (µs) read on `conn` with statement `offset` (see
/// [`FenceSql`](crate::schema::FenceSql)), in builds with the `test-clock` feature; 0 in
/// others.
#[cfg(feature = "test-clock")]
pub(crate) fn test_offset(conn: &Connection, offset: &str) -> rusqlite::Result<i64> {
    conn.prepare_cached(offset)?.query_row([], |r| r.get(0))
}

/// The test clock's offset (µs) read on `conn` with statement `offset` (see
/// [`FenceSql`](crate::schema::FenceSql)), in builds with the `test-clock` feature; 0 in
/// others.
#[cfg(not(feature = "test-clock"))]
pub(crate) fn test_offset(_: &Connection, _: &str) -> rusqlite::Result<i64> {
    Ok(0)
}
