//! Refuses a transaction (or statement) pooler at connect: the engine's connections keep
//! state between calls (their pinned settings, prepared statements, `LISTEN`), which such a
//! pooler hands to other clients' transactions. A session pooler (PgBouncer's
//! `pool_mode = session`) keeps a client on one server connection, and works.

use alkstore_mem::LockError;
use tokio_postgres::Client;

use crate::pool::Pool;
use crate::wire::{detail, down};

async fn backend(client: &Client) -> Result<i32, LockError> {
    let row = client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .map_err(|e| down(detail(&e)))?;
    Ok(row.get(0))
}

/// Checks that `client` keeps one server session: its backend's pid, read before and after
/// another connection of the pool holds a transaction open, stays the same, and is not the
/// backend that other transaction runs on. A transaction pooler hands the most recently
/// released server connection to the next transaction (PgBouncer's default,
/// `server_round_robin = 0`), so the other transaction runs on `client`'s backend, and
/// `client`'s next statement on another one.
pub(crate) async fn check_session(pool: &Pool, client: &Client) -> Result<(), LockError> {
    let first = backend(client).await?;
    let mut other = pool.connect().await?;
    let tx = other.transaction().await.map_err(|e| down(detail(&e)))?;
    let held = tx
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .map_err(|e| down(detail(&e)))?
        .get::<_, i32>(0);
    let again = backend(client).await?;
    drop(tx);
    if first != again || held == first {
        return Err(down(
            "the server connections are shared between clients transaction by transaction \
             (a pooler such as PgBouncer with pool_mode = transaction or statement): \
             alkstore-pg keeps state on its connections (settings, prepared statements, \
             LISTEN); connect it to PostgreSQL directly or through a pool with \
             pool_mode = session",
        ));
    }
    Ok(())
}
