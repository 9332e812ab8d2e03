//! `snapshot()` in pages: the schema's `snapshot_page` function, keyset by name (waiters by
//! name and arrival), each page its own statement within the `io_timeout`, so that a schema
//! of any size answers, and the server holds one page at a time.

use std::sync::Arc;

use alkstore_mem::{LeaseInfo, LockError, Snapshot, Waiting};
use tokio_postgres::Row;

use crate::op::Op;
use crate::pool::Pool;
use crate::wire::{down, from_us, owner_from_sql};

/// Rows read per page: a page is one statement, well within a 2 s `io_timeout` on a loaded
/// machine (about 10-40 ms), and a million names take a hundred round trips per table.
pub(crate) const PAGE: i32 = 10_000;

/// Where the next page of a table starts: after this key (and arrival, for waiters).
struct Cursor {
    kind: i32,
    key: String,
    order: i64,
}

/// Every live lease and queued waiter, page by page. Each page runs in a task of its own (a
/// caller that stops waiting does not cut a call on a pooled connection; it stops after the
/// page in flight). Pages are separate statements: a name that changes while the snapshot
/// is read is shown as it was when its page was read.
pub(crate) async fn read(pool: &Arc<Pool>) -> Result<Snapshot, LockError> {
    let mut snapshot = Snapshot::default();
    for kind in [0, 1] {
        let mut cursor = Some(Cursor {
            kind,
            key: String::new(),
            order: i64::MIN,
        });
        while let Some(at) = cursor.take() {
            let rows = page(pool, at).await?;
            cursor = add(&mut snapshot, kind, &rows)?;
        }
    }
    // Keys are in byte order, names too, but a name longer than 2000 bytes is keyed by its
    // digest: put such a name in its place. (Stable: a name's waiters keep their order.)
    if !snapshot.held.is_sorted_by(|a, b| a.name() <= b.name()) {
        snapshot.held.sort_by(|a, b| a.name().cmp(b.name()));
    }
    if !snapshot.waiting.is_sorted_by(|a, b| a.name() <= b.name()) {
        snapshot.waiting.sort_by(|a, b| a.name().cmp(b.name()));
    }
    Ok(snapshot)
}

/// One page's rows.
async fn page(pool: &Arc<Pool>, at: Cursor) -> Result<Vec<Row>, LockError> {
    let pool = Arc::clone(pool);
    let call = async move {
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
            [&at.kind, &at.key, &at.order, &PAGE];
        pool.call(Op::Snapshot, &params).await
    };
    Ok(tokio::spawn(call)
        .await
        .map_err(|_| down("the runtime shut down during the call"))??)
}

/// Adds a page's leases or waiters to `snapshot`; the cursor of the next page, if any.
fn add(snapshot: &mut Snapshot, kind: i32, rows: &[Row]) -> Result<Option<Cursor>, LockError> {
    let bad = || down("unexpected reply from a lock function");
    let mut next = None;
    for row in rows {
        let row_kind: i32 = row.try_get(0).map_err(|_| bad())?;
        let name: String = row.try_get(1).map_err(|_| bad())?;
        let order: i64 = row.try_get(4).map_err(|_| bad())?;
        match row_kind {
            0 => {
                let owner = owner_from_sql(&row.try_get::<_, String>(2).map_err(|_| bad())?);
                let token: i64 = row.try_get(3).map_err(|_| bad())?;
                let token = u64::try_from(token).unwrap_or(0);
                let lease = LeaseInfo::new(&name, &owner, token, from_us(order));
                snapshot.held.push(lease);
            }
            1 => {
                let owner = owner_from_sql(&row.try_get::<_, String>(2).map_err(|_| bad())?);
                snapshot.waiting.push(Waiting::new(&name, &owner));
            }
            _ => {
                // The cursor: the last key read (and its arrival, on a page of waiters).
                next = Some(Cursor {
                    kind,
                    key: name,
                    order,
                });
            }
        }
    }
    Ok(next)
}
