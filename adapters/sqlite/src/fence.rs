//! Fencing inside the user's own transaction on the same file: [`FenceError`], the
//! [`Fencing`] hook behind `lock.fence(&tx)` / `locks.fence(&tx, &lease)`, and
//! [`install_fence`], the SQL function `alkstore_fence(name, token)` for triggers and plain
//! SQL.

use std::fmt;
use std::time::Duration;

use alkstore_kit::Fencing;
use rusqlite::functions::{Context, FunctionFlags};
use rusqlite::{Connection, OptionalExtension, Transaction, params};

use crate::busy::wall_us;
use crate::config::{SqliteConfig, valid_namespace};
use crate::db::test_offset;
use crate::engine::Sqlite;
use crate::schema::FenceSql;

/// Why a fence refused: match on it to tell a stale holder from a misuse.
///
/// Converts into a `rusqlite::Error` (`?` in a function that returns `rusqlite::Result`);
/// the SQL function `alkstore_fence` fails its statement with this message.
#[derive(Debug)]
#[non_exhaustive]
pub enum FenceError {
    /// No lease on `name` has fencing token `token`: it was released, lapsed and taken over,
    /// or never had this token. Nothing guarded may be written: roll back.
    NotHeld {
        /// The lock's name.
        name: String,
        /// The token presented.
        token: u64,
    },
    /// The lease with this token is the name's last, but it lapsed `ago` (on the file's lease
    /// clock) and nobody took it yet. Nothing guarded may be written: roll back.
    Lapsed {
        /// The lock's name.
        name: String,
        /// The token presented.
        token: u64,
        /// How long ago it lapsed.
        ago: Duration,
    },
    /// The connection is not inside a transaction (autocommit): the check would protect
    /// nothing. Begin one with `BEGIN IMMEDIATE` (`TransactionBehavior::Immediate`).
    NotInTransaction,
    /// SQLite failed (busy, I/O, the namespace's tables missing: the lock was never taken in
    /// this file).
    Sqlite(rusqlite::Error),
}

impl fmt::Display for FenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FenceError::NotHeld { name, token } => write!(
                f,
                "alkstore fence: lock {name:?} is not held with fencing token {token} (released, \
                 lapsed and taken over, or never this token)"
            ),
            FenceError::Lapsed { name, token, ago } => write!(
                f,
                "alkstore fence: the lease on lock {name:?} (fencing token {token}) lapsed \
                 {ago:?} ago"
            ),
            FenceError::NotInTransaction => {
                f.write_str("alkstore fence: called outside a transaction (use BEGIN IMMEDIATE)")
            }
            FenceError::Sqlite(err) => write!(f, "alkstore fence: {err}"),
        }
    }
}

impl std::error::Error for FenceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FenceError::Sqlite(err) => Some(err),
            _ => None,
        }
    }
}

impl From<rusqlite::Error> for FenceError {
    fn from(err: rusqlite::Error) -> Self {
        FenceError::Sqlite(err)
    }
}

impl From<FenceError> for rusqlite::Error {
    fn from(err: FenceError) -> Self {
        match err {
            FenceError::Sqlite(err) => err,
            other => rusqlite::Error::UserFunctionError(Box::new(other)),
        }
    }
}

/// Checks that lease `token` on `name` in the namespace of `sql` is live now, on `conn`
/// inside its transaction. `in_transaction` (a call from Rust): refuse outside a
/// transaction, and first write the namespace's clock floor (a no-op for the data), which
/// takes SQLite's write lock if the transaction does not hold it yet. (The SQL function runs inside a statement, which
/// is a transaction of its own when autocommit is on.)
///
/// `seen` is set to the lease time the check read (0 when it read none).
fn check(
    conn: &Connection,
    sql: &FenceSql,
    name: &str,
    token: u64,
    in_transaction: bool,
    seen: &mut i64,
) -> Result<(), FenceError> {
    let take_write_lock = in_transaction;
    if in_transaction && conn.is_autocommit() {
        return Err(FenceError::NotInTransaction);
    }
    let clock = wall_us().saturating_add(test_offset(conn, &sql.offset)?);
    if take_write_lock {
        conn.prepare_cached(&sql.floor_raise)?.execute([clock])?;
    }
    let floor: i64 = conn
        .prepare_cached(&sql.floor_get)?
        .query_row([], |r| r.get(0))?;
    let now = clock.max(floor);
    *seen = now;
    let lease: Option<(Option<String>, i64, i64)> = conn
        .prepare_cached(&sql.lease_get)?
        .query_row(params![name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    let held = |t: i64| u64::try_from(t).is_ok_and(|t| t == token);
    match lease {
        Some((Some(_), t, deadline)) if held(t) => {
            if now < deadline {
                Ok(())
            } else {
                Err(FenceError::Lapsed {
                    name: name.to_owned(),
                    token,
                    ago: Duration::from_micros(u64::try_from(now - deadline).unwrap_or(0)),
                })
            }
        }
        _ => Err(FenceError::NotHeld {
            name: name.to_owned(),
            token,
        }),
    }
}

/// Fencing in your own transaction on the same file.
///
/// `lock.fence(&tx)` (and `locks.fence(&tx, &lease)`) checks, inside `tx`, that the lease is
/// live on the file's lease clock now, and errs with a [`FenceError`] otherwise. Call it
/// before the writes the lock guards, in a transaction begun with `BEGIN IMMEDIATE`
/// (`conn.transaction_with_behavior(TransactionBehavior::Immediate)`).
///
/// # Why it is exact
/// SQLite has one writer at a time. The transaction that called `fence` holds the file's
/// write lock from its `BEGIN IMMEDIATE` (the fence also writes the clock floor, so even a
/// deferred transaction holds it from the fence on, or fails there with `SQLITE_BUSY`) until
/// it commits or rolls back. Every grant of a name is a write transaction of its own, so no
/// takeover can happen between the check and the commit: if the fence passed, the guarded
/// writes commit while the lease is still the name's; if a takeover committed first, the
/// fence refuses and nothing guarded commits.
///
/// # What it costs
/// While your transaction is open, nobody writes the file: every lock operation of every
/// process waits (up to its `io_timeout`, then `Unavailable`; a waiting `acquire` keeps its
/// place and retries). A transaction that stays open past the lease's deadline delays the
/// takeover until it ends; the next grant then has a larger token. Keep guarded transactions
/// short (one longer than three waiter heartbeats, 3 s by default, also keeps waiters from
/// refreshing their entries: whoever settles the name first afterwards may skip them as
/// crashed, and they queue again at the back), and give your connection a busy timeout (`conn.busy_timeout(..)`): the engine's
/// transactions are short, but a `BEGIN IMMEDIATE` that meets one fails at once without it.
///
/// # Example
/// ```
/// # use std::time::Duration;
/// use rusqlite::{Connection, TransactionBehavior};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// # let dir = std::env::temp_dir().join(format!("alkstore-sqlite-doc-fence-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("app.db");
/// let locks = alkstore_sqlite::open(&path).await?;
/// let lock = locks.try_lock("invoice/1001", "worker-1", Duration::from_secs(30)).await?.unwrap();
///
/// let mut conn = Connection::open(&path).unwrap();
/// conn.execute_batch("CREATE TABLE IF NOT EXISTS invoices (id INTEGER PRIMARY KEY, paid INTEGER)").unwrap();
/// let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).unwrap();
/// lock.fence(&tx).expect("the lease is live");
/// tx.execute("INSERT OR REPLACE INTO invoices VALUES (1001, 1)", []).unwrap();
/// tx.commit().unwrap();
/// # lock.release().await?;
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), alkstore_mem::LockError>(()) }).unwrap();
/// ```
///
/// # What is checked
/// The name and the token only: `locks.fence(&tx, &lease)` passes for any `LeaseInfo`
/// carrying a live lease's name and token, whatever its owner and deadline say (a token is
/// unique in the namespace, so it names one lease). The lease is looked up in the store's
/// namespace, in the file `tx` is on: a transaction on another file errs with
/// [`FenceError::Sqlite`] (`no such table: <namespace>_leases`).
///
/// # A lapse seen by a fence stays lapsed
/// A refusal rolls back your transaction, and with it what the fence wrote. So when the
/// fence finds the lease lapsed, the store's own connection also writes that lease time to
/// the file, in a transaction of its own queued at once, which commits as soon as yours ends
/// (within about a millisecond; if yours stays open past the `io_timeout`, it gives up and
/// the next operation that reads the clock records it). A lease a fence saw lapsed then
/// stays lapsed for every process, even if the clock steps back.
impl<'c> Fencing<Transaction<'c>> for Sqlite {
    type Output<'a>
        = Result<(), FenceError>
    where
        Self: 'a,
        Transaction<'c>: 'a;

    fn fence<'a>(
        &'a self,
        client: &'a Transaction<'c>,
        name: &'a str,
        token: u64,
    ) -> Self::Output<'a> {
        fence_and_record(self, client, name, token)
    }
}

/// As for a [`Transaction`]: for a connection on which you ran `BEGIN IMMEDIATE` yourself
/// (refused with [`FenceError::NotInTransaction`] outside a transaction).
impl Fencing<Connection> for Sqlite {
    type Output<'a>
        = Result<(), FenceError>
    where
        Self: 'a;

    fn fence<'a>(&'a self, client: &'a Connection, name: &'a str, token: u64) -> Self::Output<'a> {
        fence_and_record(self, client, name, token)
    }
}

/// The check of `lock.fence(&tx)`; when it finds the lease lapsed, the lease time it saw is
/// also written to the file by the engine's own connection, in a transaction of its own that
/// runs once `conn`'s transaction ends (which the refusal rolls back, and the floor raise
/// in it): so a lease a fence saw lapsed stays lapsed, even if the clock then steps back.
fn fence_and_record(
    engine: &Sqlite,
    conn: &Connection,
    name: &str,
    token: u64,
) -> Result<(), FenceError> {
    let mut seen = 0;
    let checked = check(conn, engine.fence_sql(), name, token, true, &mut seen);
    if let Err(FenceError::Lapsed { .. }) = checked {
        engine.raise_floor(seen);
    }
    checked
}

/// Registers the SQL function `alkstore_fence(name, token)` on `conn`, for the default
/// namespace (`alkstore`): it returns 1 when lease `token` on `name` is live now, and
/// otherwise fails its statement with a [`FenceError`] message, so that the write it guards
/// never happens. A lock taken with another namespace is never found by it: use
/// [`install_fence_in`] with that namespace.
///
/// # Telling a refusal apart
/// SQLite carries a function's error as text only: rusqlite answers
/// `Error::SqliteFailure` (code `Unknown`, extended code 1) whose message starts with
/// **`alkstore fence:`**, the stable prefix of every refusal (a stale or unknown token, a
/// lapsed lease, a negative token, a namespace that is not an identifier). Match it with
/// `err.to_string().contains("alkstore fence:")`.
///
/// # A lapse is not recorded here
/// Unlike `lock.fence(&tx)`, the function writes nothing: when it finds a lease lapsed and
/// your transaction then rolls back, a clock stepped back later can make the same lease pass
/// it again (it is still the name's last lease and nobody else was granted it: exclusion
/// holds). Any operation of a store on the file records the lapse.
///
/// Use it in triggers, so that even plain SQL (any connection that installed the function)
/// cannot write a row with a stale token; one per way of writing (`INSERT OR REPLACE` fires
/// no `UPDATE` trigger):
/// ```sql
/// CREATE TRIGGER invoices_fenced BEFORE UPDATE ON invoices
/// BEGIN SELECT alkstore_fence('invoice/' || NEW.id, NEW.token); END;
/// CREATE TRIGGER invoices_fenced_insert BEFORE INSERT ON invoices
/// BEGIN SELECT alkstore_fence('invoice/' || NEW.id, NEW.token); END;
/// ```
/// or in your own statements inside a `BEGIN IMMEDIATE` transaction:
/// `SELECT alkstore_fence(?1, ?2)`. The function is per connection: a connection that did not
/// install it fails such a trigger with "no such function", which refuses the write too.
/// It takes no lock of its own: call it inside a transaction that holds the write lock
/// (`BEGIN IMMEDIATE`, or from a trigger of a write statement), where it is exact for the
/// reasons given on [`Sqlite`]'s `Fencing` impl.
///
/// # Errors
/// Whatever SQLite answers when registering the function.
///
/// # Example
/// ```
/// let conn = rusqlite::Connection::open_in_memory().unwrap();
/// alkstore_sqlite::install_fence(&conn).unwrap();
/// ```
pub fn install_fence(conn: &Connection) -> rusqlite::Result<()> {
    install_fence_in(conn, SqliteConfig::DEFAULT_NAMESPACE)
}

/// [`install_fence`] for the locks of `namespace` (see
/// [`SqliteConfig::with_namespace`](crate::SqliteConfig::with_namespace)).
///
/// # Errors
/// A namespace that [`with_namespace`](crate::SqliteConfig::with_namespace) refuses (it
/// would be pasted into SQL), as `rusqlite::Error::UserFunctionError`; otherwise whatever
/// SQLite answers when registering the function.
///
/// # Example
/// ```
/// let conn = rusqlite::Connection::open_in_memory().unwrap();
/// alkstore_sqlite::install_fence_in(&conn, "jobs").unwrap();
/// assert!(alkstore_sqlite::install_fence_in(&conn, "jobs\"; --").is_err());
/// ```
pub fn install_fence_in(conn: &Connection, namespace: &str) -> rusqlite::Result<()> {
    if !valid_namespace(namespace) {
        return Err(rusqlite::Error::UserFunctionError(
            format!(
                "alkstore fence: the namespace {namespace:?} is not an ASCII letter followed by \
                 up to 39 ASCII letters, digits or underscores"
            )
            .into(),
        ));
    }
    let namespace = namespace.to_owned();
    let sql = FenceSql::new(&namespace);
    conn.create_scalar_function(
        "alkstore_fence",
        2,
        FunctionFlags::SQLITE_UTF8,
        move |ctx: &Context<'_>| {
            let (name, token) = fence_args(ctx)?;
            let Ok(token) = u64::try_from(token) else {
                return Err(rusqlite::Error::UserFunctionError(
                    format!(
                        "alkstore fence: the fencing token {token} given for lock {name:?} is \
                         negative (tokens are positive): refused"
                    )
                    .into(),
                ));
            };
            // SAFETY: the connection is used only within this call, on the thread running
            // the statement, and never closed here (rusqlite's documented use).
            #[allow(unsafe_code)]
            let conn = unsafe { ctx.get_connection()? };
            match check(&conn, &sql, &name, token, false, &mut 0) {
                Ok(()) => Ok(1i64),
                // Say where it looked: a lock of another namespace is never found here (its
                // tables may even be missing from the file).
                Err(err @ (FenceError::NotHeld { .. } | FenceError::Sqlite(_))) => {
                    Err(rusqlite::Error::UserFunctionError(
                        format!(
                            "{err}, in the namespace {namespace:?} (a lock of another namespace \
                             needs install_fence_in with its namespace)"
                        )
                        .into(),
                    ))
                }
                Err(err) => Err(err.into()),
            }
        },
    )
}

/// `alkstore_fence`'s arguments (a text name, an integer token), or an error saying so, not
/// rusqlite's "Invalid function parameter type Text at index 1".
fn fence_args(ctx: &Context<'_>) -> rusqlite::Result<(String, i64)> {
    use rusqlite::types::ValueRef;
    let kind = |v: ValueRef<'_>| match v {
        ValueRef::Null => "NULL",
        ValueRef::Integer(_) => "an integer",
        ValueRef::Real(_) => "a real",
        ValueRef::Text(_) => "a text",
        ValueRef::Blob(_) => "a blob",
    };
    let (name, token) = (ctx.get_raw(0), ctx.get_raw(1));
    match (name, token) {
        (ValueRef::Text(bytes), ValueRef::Integer(token)) => match std::str::from_utf8(bytes) {
            Ok(name) => Ok((name.to_owned(), token)),
            Err(_) => Err(rusqlite::Error::UserFunctionError(
                "alkstore fence: alkstore_fence(name, token): the name is not valid UTF-8".into(),
            )),
        },
        _ => Err(rusqlite::Error::UserFunctionError(
            format!(
                "alkstore fence: alkstore_fence(name, token) takes a text name and an integer \
                 token, not {} and {}",
                kind(name),
                kind(token)
            )
            .into(),
        )),
    }
}
