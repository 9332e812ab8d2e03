//! [`PgLock`]: a held lease (the kit's handle), and the fence that checks it inside your own
//! transaction: `lock.fence(&tx)`, `locks.fence(&tx, &lease)`, `locks.fence_sql()`.

use alkstore_kit::{FenceSql, Fencing};
use alkstore_mem::BoxedFuture;
use tokio_postgres::GenericClient;

use crate::store::Pg;
use crate::wire::token_param;

/// A lease held in PostgreSQL: the handle [`PgLocks::try_lock`](alkstore_kit::Locks::try_lock)
/// and [`PgLocks::acquire`](alkstore_kit::Locks::acquire) hand out.
///
/// Its deadline is on the server's clock (nanoseconds since the Unix epoch by its
/// `clock_timestamp()`, raised to the schema's floor). The server cuts a ttl above 100 years
/// to 100 years (so that deadlines stay well inside a `bigint`); `deadline()` is the one it
/// granted. The token is unique in the schema.
///
/// [`fence`](alkstore_kit::Lock::fence) checks the lease inside your transaction, before a
/// write the lock guards: it runs the schema's `fence(name, token)` on `client` (a
/// `tokio_postgres::Transaction`, or a `Client` inside `BEGIN`) and fails with SQLSTATE
/// `55F01` ([`is_fence_error`](crate::is_fence_error)) unless the lease is live on the
/// server's clock now; after it succeeds, nobody can be granted the name until the
/// transaction commits or rolls back, even past the deadline (a long transaction delays a
/// takeover). Renewals and the release of this lease go on meanwhile, and so does the queue
/// of waiters; a release then answers `true`, the lease ends, and the first waiter is handed
/// the name once the transaction has ended (see the [crate docs](crate#fencing-in-your-own-transaction)).
/// Called inside a savepoint that is then rolled back, the fence is released with it; in a
/// `READ ONLY` transaction it always fails, with SQLSTATE `25006`.
///
/// A release that hands the name to nobody does not wait for its WAL flush (see the
/// [crate docs](crate#the-model)): if the server crashes right after, the lease may come
/// back with it and lapse at its deadline.
///
/// # Example
/// ```no_run
/// # async fn run(lock: &alkstore_pg::PgLock, client: &mut tokio_postgres::Client)
/// # -> Result<(), tokio_postgres::Error> {
/// let tx = client.transaction().await?;
/// lock.fence(&tx).await?; // refused unless the lease is live; holds it until commit
/// tx.execute("UPDATE invoices SET paid = true WHERE id = 1001", &[]).await?;
/// tx.commit().await?;
/// # Ok(())
/// # }
/// ```
pub type PgLock = alkstore_kit::Lock<Pg>;

/// The future of [`fence`](alkstore_kit::Lock::fence) on PostgreSQL: the `tokio_postgres`
/// outcome of the call (`55F01` when the lease is not live with this token).
pub type PgFence<'a> = BoxedFuture<'a, Result<(), tokio_postgres::Error>>;

/// `lock.fence(&tx)` and `locks.fence(&tx, &lease)` on any `tokio-postgres` client.
impl<C: GenericClient + Sync> Fencing<C> for Pg {
    type Output<'a>
        = PgFence<'a>
    where
        C: 'a;

    fn fence<'a>(&'a self, client: &'a C, name: &'a str, token: u64) -> PgFence<'a> {
        BoxedFuture::new(async move {
            let token = token_param(token);
            client
                .execute(&self.fence_sql(), &[&name, &token])
                .await
                .map(|_| ())
        })
    }
}

/// `locks.fence_sql()`: `SELECT "<schema>".fence($1, $2)`, with the lock's name (text) and
/// fencing token (bigint), for any client. Run it inside the transaction that makes the
/// guarded write, before the write.
impl FenceSql for Pg {
    fn fence_sql(&self) -> String {
        format!("SELECT {}.fence($1, $2)", self.ident())
    }
}
