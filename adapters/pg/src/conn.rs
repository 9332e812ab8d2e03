//! One pooled connection ([`Conn`]): opening it with the engine's pinned settings, and its
//! prepared statements.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use tokio::sync::OnceCell;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls, Statement};

use crate::op::Op;

/// One connection and its statements (prepared on first use, or all at once by `warm`);
/// shared by concurrent calls, which `tokio-postgres` pipelines on it.
pub(crate) struct Conn {
    pub(crate) client: Client,
    pub(crate) statements: [OnceCell<Statement>; Op::COUNT],
    /// How many calls are in flight on it.
    pub(crate) in_flight: AtomicUsize,
}

impl Conn {
    /// A connection with nothing prepared yet and no call in flight.
    pub(crate) fn new(client: Client) -> Arc<Conn> {
        Arc::new(Conn {
            client,
            statements: Default::default(),
            in_flight: AtomicUsize::new(0),
        })
    }
}

/// The settings the engine's answers depend on, pinned for its sessions whatever the
/// server's, database's or role's defaults (`ALTER ROLE .. SET`, `ALTER DATABASE .. SET`):
/// its functions are written for READ COMMITTED (each statement sees the rows committed
/// before it; under REPEATABLE READ or SERIALIZABLE a concurrent update of a lease row fails
/// the call with 40001), a read-write transaction that is never cut while idle (the
/// migration's transaction waits between its statements), and a flushed commit. Set by
/// statements on every new connection, before its first call (not by the startup packet's
/// `options`, which PgBouncer refuses), so that they hold behind a session pooler too;
/// besides these, the `statement_timeout` and `lock_timeout` of the config. The
/// `search_path` is `pg_catalog, pg_temp` (no schema a role's or database's default names can
/// shadow a function or operator the statements use; `pg_temp` last), and
/// `idle_session_timeout` is 0 (PostgreSQL 14 and later; set only where the server knows it):
/// the engine's connections wait idle between calls, and one ended by the server mid-call
/// would make a release fail.
pub(crate) const PINNED: &str = "SET search_path = pg_catalog, pg_temp;
SELECT pg_catalog.set_config(name, '0', false) FROM pg_catalog.pg_settings
 WHERE name = 'idle_session_timeout';
SET default_transaction_isolation = 'read committed';
SET default_transaction_read_only = off; SET default_transaction_deferrable = off;
SET idle_in_transaction_session_timeout = 0; SET synchronous_commit = on;";

/// Opens a connection with `config`, its driver task spawned on the current runtime, and
/// runs `pinned` on it (the engine's settings) before it is used.
pub(crate) async fn open(
    config: &tokio_postgres::Config,
    pinned: &str,
) -> Result<(Client, tokio::task::JoinHandle<()>), tokio_postgres::Error> {
    let (client, connection) = config.connect(NoTls).await?;
    // Ends when the server closes the connection or the client is dropped.
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    pin(&client, pinned).await?;
    Ok((client, driver))
}

/// How many times a message of [`pin`] runs again after it was cancelled.
const PIN_RETRIES: usize = 3;

/// Runs the engine's settings `pinned` on `client`: its first line (the timeouts) in a message
/// of its own, since a message runs under the `statement_timeout` in force when it arrives (a
/// role's 1 ms would cut the rest, which reads `pg_settings`). A message cancelled (57014) is
/// run again, up to [`PIN_RETRIES`] times (its statements only set settings): a role's 1 ms
/// `statement_timeout` can cut even the first `SET`, or fire as a statement ends and cancel
/// the next one, which the server then reports as "canceling statement due to user request".
pub(crate) async fn pin(client: &Client, pinned: &str) -> Result<(), tokio_postgres::Error> {
    let (timeouts, rest) = pinned.split_once('\n').unwrap_or((pinned, ""));
    for message in [timeouts, rest] {
        let mut retries = 0;
        loop {
            match client.batch_execute(message).await {
                Err(e) if retries < PIN_RETRIES && e.code() == Some(&SqlState::QUERY_CANCELED) => {
                    retries += 1
                }
                done => break done?,
            }
        }
    }
    Ok(())
}

/// Prepares every statement of `sql` on `conn`: false if one failed.
pub(crate) async fn prepare_all(conn: &Conn, sql: &[String]) -> bool {
    for (slot, text) in conn.statements.iter().zip(sql) {
        let prepared = slot.get_or_try_init(|| conn.client.prepare(text)).await;
        if prepared.is_err() {
            return false;
        }
    }
    true
}
