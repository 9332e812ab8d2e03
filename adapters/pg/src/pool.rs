//! A small pool of `tokio-postgres` connections ([`Conn`]): at most `pool_size` open, idle
//! ones reused, broken ones dropped, each with its prepared statements; every call bounded by
//! the `io_timeout` (waiting for a connection and connecting included).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use alkstore_kit::unavailable;
use alkstore_mem::LockError;
use tokio::time::Instant;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row};

use crate::conn::{Conn, PINNED, open, prepare_all};
use crate::fenced::Fenced;
use crate::op::Op;
use crate::sql::Schema;
use crate::wire::{describe, detail, down, redacted};

/// Why a call failed.
#[derive(Debug)]
pub(crate) enum Fail {
    /// The lease row is locked by another transaction beyond the lock wait (SQLSTATE
    /// 55P03): a transaction holding `fence()` on it. Busy, for the caller to interpret.
    Locked,
    /// Anything else: `LockError::Unavailable`.
    Down(LockError),
}

impl From<Fail> for LockError {
    fn from(fail: Fail) -> LockError {
        match fail {
            Fail::Locked => down(
                "the lease row is locked by a transaction that called fence() (or held by \
                 another transaction for longer than the lock wait); retry once it has ended",
            ),
            Fail::Down(err) => err,
        }
    }
}

/// The pause before a call that found a row locked beyond the lock wait is tried again.
pub(crate) const LOCKED_RETRY: Duration = Duration::from_millis(10);

/// The first pause of a `try_lock` that found its row locked (it never waits on the row on
/// the server: `FOR UPDATE NOWAIT`); each next pause doubles, within the lock wait.
const BUSY_RETRY: Duration = crate::fenced::FRESH;

/// How many calls the first open connection carries at once before others are used. Calls
/// on one connection run on the server in the order they were sent, so a call made after
/// another one was sent is answered after it (as on Redis's one multiplexed connection),
/// unless the first connection is this busy.
const LEAD_DEPTH: usize = 4;

/// The pool: `size` connection slots, filled on demand (or by `warm`), each connection
/// shared by concurrent calls. Calls go to the first connection while it carries fewer than
/// [`LEAD_DEPTH`]; beyond that, to the least busy one (opening more, up to `size`). Calls
/// that contend for a busy name ([`Op::polls`]) never use the last slot (of two or more): a
/// holder's renewals and releases and the reads find a connection no poller queues on.
pub(crate) struct Pool {
    config: tokio_postgres::Config,
    slots: Mutex<Vec<Option<Arc<Conn>>>>,
    io_timeout: Duration,
    lock_wait: Duration,
    pinned: String,
    sql: Vec<String>,
    /// The names a `try_lock` found locked, which the next attempts of every call share.
    fenced: Fenced,
}

/// Marks a call in flight on a connection; if the call is dropped before it ends (its
/// `io_timeout` ran out), the connection is taken out of its slot, so that the next call
/// opens a fresh one instead of queueing behind a connection that may be hung.
struct InFlight<'a> {
    pool: &'a Pool,
    conn: Arc<Conn>,
    done: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.conn.in_flight.fetch_sub(1, Ordering::Relaxed);
        if !self.done {
            self.pool.evict(&self.conn);
        }
    }
}

impl Pool {
    /// A pool of at most `size` connections to `config` (each set to the engine's
    /// `statement_timeout`, `lock_timeout` and the [`PINNED`] settings when opened), for
    /// `schema`.
    ///
    /// `synchronous_commit = on` whatever the server's, database's or role's default: a grant
    /// is answered only once its commit (and the token sequence's WAL record before it) is
    /// flushed, so a crash or restart never hands out a token a holder was already told.
    /// With the server's `synchronous_commit = off` (a common setting) the last grants' WAL
    /// could be lost in a crash, and the sequence would hand their tokens out again.
    pub(crate) fn new(
        mut config: tokio_postgres::Config,
        size: usize,
        io_timeout: Duration,
        lock_wait: Duration,
        schema: &Schema,
    ) -> Self {
        let ms = |d: Duration| d.as_millis().max(1);
        let pinned = format!(
            "SET statement_timeout = {}; SET lock_timeout = {};\n{PINNED}",
            ms(io_timeout),
            ms(lock_wait)
        );
        if config.get_application_name().is_none() {
            config.application_name("alkstore-pg");
        }
        config.connect_timeout(io_timeout);
        let sql = Op::all().map(|op| op.sql(schema)).collect();
        Pool {
            config,
            slots: Mutex::new(vec![None; size.max(1)]),
            io_timeout,
            lock_wait,
            pinned,
            sql,
            fenced: Fenced::default(),
        }
    }

    /// The connection settings (for the listener and the drop-release helper).
    pub(crate) fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    /// The statements that set a new connection up ([`open`]).
    pub(crate) fn pinned(&self) -> &str {
        &self.pinned
    }

    /// Opens a new connection (its driver task spawned on the current runtime), set up.
    pub(crate) async fn connect(&self) -> Result<Client, LockError> {
        let (client, _) = open(&self.config, &self.pinned).await.map_err(|e| {
            down(format!(
                "could not connect to {}: {}",
                redacted(&self.config),
                detail(&e)
            ))
        })?;
        Ok(client)
    }

    /// Fills every slot now, each connection with every statement prepared, `first` (the
    /// connection that checked the schema) in the first slot, so that the first calls of a
    /// new store pay no connection or preparation round trips. Best effort: a slot whose
    /// connection fails is filled later, on demand.
    pub(crate) async fn warm(&self, first: Client) {
        let size = self.lock().len();
        let opening: Vec<_> = (1..size)
            .map(|_| {
                let (config, sql) = (self.config.clone(), self.sql.clone());
                let pinned = self.pinned.clone();
                tokio::spawn(async move {
                    let (client, _) = open(&config, &pinned).await.ok()?;
                    let conn = Conn::new(client);
                    prepare_all(&conn, &sql).await.then_some(conn)
                })
            })
            .collect();
        let first = Conn::new(first);
        if prepare_all(&first, &self.sql).await {
            self.lock()[0] = Some(first);
        }
        for (i, task) in opening.into_iter().enumerate() {
            if let Ok(Some(conn)) = task.await {
                let mut slots = self.lock();
                if slots[i + 1].is_none() {
                    slots[i + 1] = Some(conn);
                }
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Option<Arc<Conn>>>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes `conn` out of its slot (if it is still there).
    fn evict(&self, conn: &Arc<Conn>) {
        for slot in self.lock().iter_mut() {
            if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
                *slot = None;
            }
        }
    }

    /// The connection for the next call of `op`: the first open one while it carries fewer
    /// than [`LEAD_DEPTH`] calls; else an empty slot's new connection; else the least busy
    /// (of all slots but the last, for an [`Op::polls`] when there are two or more).
    async fn pick(&self, op: Op) -> Result<Arc<Conn>, LockError> {
        let empty = {
            let mut slots = self.lock();
            let mut best: Option<Arc<Conn>> = None;
            let mut empty = None;
            let usable = if op.polls() && slots.len() > 1 {
                slots.len() - 1
            } else {
                slots.len()
            };
            for (i, slot) in slots.iter_mut().take(usable).enumerate() {
                if slot.as_ref().is_some_and(|c| c.client.is_closed()) {
                    *slot = None;
                }
                match slot {
                    None => {
                        if empty.is_none() {
                            empty = Some(i);
                        }
                    }
                    Some(conn) => {
                        let load = conn.in_flight.load(Ordering::Relaxed);
                        if best.is_none() && load < LEAD_DEPTH {
                            return Ok(Arc::clone(conn));
                        }
                        if best
                            .as_ref()
                            .is_none_or(|b| load < b.in_flight.load(Ordering::Relaxed))
                        {
                            best = Some(Arc::clone(conn));
                        }
                    }
                }
            }
            match (empty, best) {
                (None, Some(best)) => return Ok(best),
                (empty, _) => empty,
            }
        };
        let conn = Conn::new(self.connect().await?);
        let mut slots = self.lock();
        // If another call filled the slot meanwhile, this connection serves this call only.
        if let Some(slot @ None) = empty.and_then(|i| slots.get_mut(i)) {
            *slot = Some(Arc::clone(&conn));
        }
        Ok(conn)
    }

    /// Runs `op` (any but [`Op::TryLock`]: [`try_lock`](Self::try_lock)) with `params` and
    /// returns its rows, within the `io_timeout` (a call that found a row locked is tried
    /// again meanwhile, if [`Op::retries_locked`]).
    pub(crate) async fn call(
        &self,
        op: Op,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Fail> {
        let io = self.io_timeout;
        let mut locked = false;
        let attempts = async {
            loop {
                match self.call_untimed(op, params).await {
                    Err(Fail::Locked) if op.retries_locked() => {
                        locked = true;
                        tokio::time::sleep(LOCKED_RETRY).await;
                    }
                    result => return result,
                }
            }
        };
        match tokio::time::timeout(io, attempts).await {
            Ok(result) => result,
            Err(_) if locked => Err(Fail::Locked),
            Err(_) => Err(not_answered(io)),
        }
    }

    /// Runs [`Op::TryLock`] on `name` with `params`, within the `io_timeout`: a row found
    /// locked is tried again within the lock wait, with pauses doubling from [`BUSY_RETRY`],
    /// the connection free for other calls during each pause; an attempt that another
    /// call's fresh one answers for ([`Fenced`]) is not sent.
    pub(crate) async fn try_lock(
        &self,
        name: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Fail> {
        let io = self.io_timeout;
        let started = Instant::now();
        let attempts = async {
            let mut pause = BUSY_RETRY;
            loop {
                let sent = Instant::now();
                if self.fenced.may_send(name, sent) {
                    match self.call_untimed(Op::TryLock, params).await {
                        Err(Fail::Locked) => {
                            let now = Instant::now();
                            self.fenced.locked(name, sent, now, self.lock_wait);
                        }
                        result => {
                            self.fenced.answered(name);
                            return result;
                        }
                    }
                }
                let left = self.lock_wait.saturating_sub(started.elapsed());
                if left.is_zero() {
                    return Err(Fail::Locked);
                }
                tokio::time::sleep(pause.min(left)).await;
                pause = pause.saturating_mul(2);
            }
        };
        tokio::time::timeout(io, attempts)
            .await
            .unwrap_or_else(|_| Err(not_answered(io)))
    }

    async fn call_untimed(&self, op: Op, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, Fail> {
        let mut retried = false;
        loop {
            let conn = self.pick(op).await.map_err(Fail::Down)?;
            conn.in_flight.fetch_add(1, Ordering::Relaxed);
            let mut flight = InFlight {
                pool: self,
                conn,
                done: false,
            };
            let result = self.run(&flight.conn, op, params).await;
            flight.done = true;
            match result {
                Ok(rows) => return Ok(rows),
                Err(e) => {
                    if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) {
                        return Err(Fail::Locked);
                    }
                    let closed = flight.conn.client.is_closed() || e.is_closed();
                    if closed {
                        self.evict(&flight.conn);
                    }
                    // A connection found dead (the server restarted, or terminated it) is
                    // replaced, and the call tried once more, if running it twice is safe: any
                    // call whose answer was the server ending the session (any SQLSTATE of
                    // class 57, operator intervention: a shutdown, a terminated backend,
                    // idle_session_timeout's 57P05, ...; its transaction was rolled back,
                    // nothing of it happened), and otherwise those that may run twice.
                    let not_run = e.code().is_some_and(|code| code.code().starts_with("57"));
                    if closed && !retried && (not_run || op.retryable()) {
                        retried = true;
                        continue;
                    }
                    return Err(Fail::Down(unavailable(describe(&e))));
                }
            }
        }
    }

    async fn run(
        &self,
        conn: &Conn,
        op: Op,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        let statement = conn.statements[op.index()]
            .get_or_try_init(|| conn.client.prepare(&self.sql[op.index()]))
            .await?;
        conn.client.query(statement, params).await
    }
}

/// The failure of a call the server did not answer within the `io_timeout` `io`.
fn not_answered(io: Duration) -> Fail {
    Fail::Down(unavailable(format!(
        "postgres did not answer within the io_timeout of {io:?}"
    )))
}
