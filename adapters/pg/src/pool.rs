//! A small pool of `tokio-postgres` connections: at most `pool_size` open, idle ones reused,
//! broken ones dropped, each with its prepared statements; every call bounded by the
//! `io_timeout` (waiting for a connection and connecting included).

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use alkstore_mem::LockError;
use tokio::sync::Semaphore;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Row, Statement};

use crate::sql::Schema;

/// The calls the engine makes, one server function each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    TryLock,
    Acquire,
    Cancel,
    Release,
    Renew,
    IsHeld,
    Holder,
    Snapshot,
    ForceRelease,
    Now,
    Sweep,
    #[cfg(feature = "test-clock")]
    AdvanceClock,
}

impl Op {
    const COUNT: usize = 12;

    fn index(self) -> usize {
        self as usize
    }

    /// The statement's text for `schema`.
    fn sql(self, schema: &Schema) -> String {
        let s = &schema.ident;
        match self {
            Op::TryLock => schema.fast("try_lock_fast"),
            Op::Release => schema.fast("release_fast"),
            Op::Sweep => schema.fast("sweep"),
            Op::Acquire => format!("SELECT {s}.acquire($1, $2, $3, $4, $5, $6, $7)"),
            Op::Cancel => format!("SELECT {s}.cancel($1, $2)"),
            Op::Renew => format!("SELECT {s}.renew($1, $2, $3)"),
            Op::IsHeld => format!("SELECT {s}.is_held($1, $2)"),
            Op::Holder => format!("SELECT * FROM {s}.holder($1)"),
            Op::Snapshot => format!("SELECT * FROM {s}.snapshot()"),
            Op::ForceRelease => format!("SELECT * FROM {s}.force_release($1)"),
            Op::Now => format!("SELECT {s}.server_now()"),
            #[cfg(feature = "test-clock")]
            Op::AdvanceClock => format!("SELECT {s}.advance_test_clock($1)"),
        }
    }

    /// Whether running it twice (after a connection died before its reply came) is safe:
    /// everything but release and force_release, whose second run would answer as if the
    /// lease had not been live.
    fn retryable(self) -> bool {
        !matches!(self, Op::Release | Op::ForceRelease)
    }

    /// Every operation, in discriminant order.
    fn all() -> impl Iterator<Item = Op> {
        [
            Op::TryLock,
            Op::Acquire,
            Op::Cancel,
            Op::Release,
            Op::Renew,
            Op::IsHeld,
            Op::Holder,
            Op::Snapshot,
            Op::ForceRelease,
            Op::Now,
            Op::Sweep,
            #[cfg(feature = "test-clock")]
            Op::AdvanceClock,
        ]
        .into_iter()
    }
}

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
            Fail::Locked => unavailable(
                "the lease row is locked by a transaction that called fence() (or another \
                 long transaction); retry once it has ended",
            ),
            Fail::Down(err) => err,
        }
    }
}

/// `LockError::Unavailable` with this reason.
pub(crate) fn unavailable(reason: impl Into<String>) -> LockError {
    LockError::Unavailable {
        reason: reason.into(),
    }
}

/// A `tokio-postgres` error in words, with its SQLSTATE when the server sent one.
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!(
            "postgres: {}: {} (SQLSTATE {})",
            db.severity(),
            db.message(),
            db.code().code()
        ),
        None if e.is_closed() => "postgres: the connection was closed".into(),
        None => format!("postgres: {e}"),
    }
}

/// `url` for messages: what `tokio-postgres` parsed of it, without the password.
pub(crate) fn redacted(config: &tokio_postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(h) => h.clone(),
            #[cfg(unix)]
            tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
        })
        .collect();
    let ports: Vec<String> = config.get_ports().iter().map(u16::to_string).collect();
    format!(
        "postgres host {} port {} database {:?}",
        hosts.join(","),
        if ports.is_empty() {
            "5432".into()
        } else {
            ports.join(",")
        },
        config.get_dbname().unwrap_or("(default)")
    )
}

/// One pooled connection and its statements, prepared on first use.
struct Conn {
    client: Client,
    statements: [Option<Statement>; Op::COUNT],
}

/// The pool.
pub(crate) struct Pool {
    config: tokio_postgres::Config,
    idle: Mutex<Vec<Conn>>,
    permits: Semaphore,
    io_timeout: Duration,
    sql: Vec<String>,
}

impl Pool {
    /// A pool of at most `size` connections to `config` (whose session options get the
    /// engine's `statement_timeout` and `lock_timeout`), for `schema`.
    pub(crate) fn new(
        mut config: tokio_postgres::Config,
        size: usize,
        io_timeout: Duration,
        lock_wait: Duration,
        schema: &Schema,
    ) -> Self {
        let ms = |d: Duration| d.as_millis().max(1);
        let options = format!(
            "{} -c statement_timeout={} -c lock_timeout={}",
            config.get_options().unwrap_or_default(),
            ms(io_timeout),
            ms(lock_wait)
        );
        config.options(options.trim_start());
        if config.get_application_name().is_none() {
            config.application_name("alkstore-pg");
        }
        config.connect_timeout(io_timeout);
        let sql = Op::all().map(|op| op.sql(schema)).collect();
        Pool {
            config,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(size),
            io_timeout,
            sql,
        }
    }

    /// The connection settings (for the listener and the drop-release helper).
    pub(crate) fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    /// Opens a new connection (its driver task spawned on the current runtime).
    pub(crate) async fn connect(&self) -> Result<Client, LockError> {
        let (client, connection) = self.config.connect(NoTls).await.map_err(|e| {
            unavailable(format!(
                "could not connect to {}: {}",
                redacted(&self.config),
                describe(&e)
            ))
        })?;
        tokio::spawn(async move {
            // Ends when the server closes the connection or the client is dropped.
            let _ = connection.await;
        });
        Ok(client)
    }

    /// Runs `op` with `params` and returns its rows, within the `io_timeout`.
    pub(crate) async fn call(
        &self,
        op: Op,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Fail> {
        let io = self.io_timeout;
        match tokio::time::timeout(io, self.call_untimed(op, params)).await {
            Ok(result) => result,
            Err(_) => Err(Fail::Down(unavailable(format!(
                "postgres did not answer within the io_timeout of {io:?}"
            )))),
        }
    }

    async fn call_untimed(&self, op: Op, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, Fail> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| Fail::Down(unavailable("the connection pool is closed")))?;
        loop {
            let (mut conn, reused) = match self.take_idle() {
                Some(conn) => (conn, true),
                None => (
                    Conn {
                        client: self.connect().await.map_err(Fail::Down)?,
                        statements: Default::default(),
                    },
                    false,
                ),
            };
            match self.run(&mut conn, op, params).await {
                Ok(rows) => {
                    self.put_idle(conn);
                    return Ok(rows);
                }
                Err(e) => {
                    let closed = conn.client.is_closed() || e.is_closed();
                    if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) {
                        self.put_idle(conn);
                        return Err(Fail::Locked);
                    }
                    // A connection found dead on first use after a rest (the server
                    // restarted, or terminated it) is replaced, and the call tried once
                    // more, if running it twice is safe.
                    if closed && reused && op.retryable() {
                        continue;
                    }
                    if !closed && e.as_db_error().is_some() {
                        self.put_idle(conn);
                    }
                    return Err(Fail::Down(unavailable(describe(&e))));
                }
            }
        }
    }

    async fn run(
        &self,
        conn: &mut Conn,
        op: Op,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        let slot = &mut conn.statements[op.index()];
        let statement = match slot {
            Some(statement) => statement.clone(),
            None => {
                let statement = conn.client.prepare(&self.sql[op.index()]).await?;
                *slot = Some(statement.clone());
                statement
            }
        };
        conn.client.query(&statement, params).await
    }

    fn take_idle(&self) -> Option<Conn> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        while let Some(conn) = idle.pop() {
            if !conn.client.is_closed() {
                return Some(conn);
            }
        }
        None
    }

    fn put_idle(&self, conn: Conn) {
        if !conn.client.is_closed() {
            self.idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(conn);
        }
    }
}
