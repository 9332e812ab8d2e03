//! Refuses a transaction (or statement) pooler at connect: the engine's connections keep
//! state between calls (their pinned settings, prepared statements, `LISTEN`), which such a
//! pooler hands to other clients' transactions. A session pooler (PgBouncer's
//! `pool_mode = session`) keeps a client on one server connection, and works.

use alkstore_mem::LockError;
use tokio_postgres::{Client, SimpleQueryMessage};

use crate::wire::{detail, down};

/// The pid of the backend that runs the next statement of `client` (or of its open
/// transaction): one simple-protocol message (no prepared statement, which a transaction
/// pooler could hand to another server between its parse and its execution).
async fn backend(client: &Client) -> Result<String, LockError> {
    let messages = client
        .simple_query("SELECT pg_backend_pid()")
        .await
        .map_err(|e| down(detail(&e)))?;
    messages
        .iter()
        .find_map(|m| match m {
            SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
            _ => None,
        })
        .ok_or_else(|| down("unexpected reply to SELECT pg_backend_pid()"))
}

/// Checks that `client` keeps one server session: its backend's pid, read before and after
/// `other` (another connection, opened alongside) holds a transaction open, stays the same,
/// and is not the backend that other transaction runs on. A transaction pooler hands the most recently
/// released server connection to the next transaction (PgBouncer's default,
/// `server_round_robin = 0`), so the other transaction runs on `client`'s backend, and
/// `client`'s next statement on another one.
pub(crate) async fn check_session(client: &Client, mut other: Client) -> Result<(), LockError> {
    let first = backend(client).await?;
    let tx = other.transaction().await.map_err(|e| down(detail(&e)))?;
    let held = backend(tx.client()).await?;
    let again = backend(client).await?;
    drop(tx);
    if first != again || held == first {
        return Err(refused());
    }
    Ok(())
}

/// The refusal of a transaction (or statement) pooler.
fn refused() -> LockError {
    down(
        "the server connections are shared between clients transaction by transaction \
         (a pooler such as PgBouncer with pool_mode = transaction or statement): \
         alkstore-pg keeps state on its connections (settings, prepared statements, \
         LISTEN); connect it to PostgreSQL directly or through a pool with \
         pool_mode = session",
    )
}

/// What a transaction or statement pooler makes of the schema check that runs before the
/// pooler check: a prepared statement that another server connection does not know (or
/// already knows), or PgBouncer's refusal of a transaction block. Such an error is told as
/// the pooler's refusal (saying what to configure); any other is returned as it is.
pub(crate) fn explain(err: LockError) -> LockError {
    match &err {
        LockError::Unavailable { reason }
            if (reason.contains("prepared statement \"")
                && (reason.contains("does not exist") || reason.contains("already exists")))
                || reason.contains("not allowed in statement pooling mode") =>
        {
            refused()
        }
        _ => err,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pooler_error_met_by_the_schema_check_is_told_as_the_pooler_refusal() {
        for seen in [
            "postgres: schema \"s\": ERROR: prepared statement \"s102\" does not exist (SQLSTATE 26000)",
            "postgres: schema \"s\": ERROR: prepared statement \"s0\" already exists (SQLSTATE 42P05)",
            "postgres: FATAL: transaction blocks not allowed in statement pooling mode",
        ] {
            let told = explain(down(seen));
            assert!(
                format!("{told}").contains("pool_mode = session"),
                "{seen}: {told}"
            );
        }
        let other = explain(down("postgres: connection refused"));
        assert!(format!("{other}").contains("connection refused"), "{other}");
    }
}
