//! The baseline: a hand-rolled lease row, as a user would write it with no library.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, TransactionBehavior};

use crate::TTL;

fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// One lease row per name: `INSERT .. ON CONFLICT DO UPDATE .. WHERE deadline < now
/// RETURNING token` in `BEGIN IMMEDIATE`, then a compare-and-free `UPDATE .. WHERE token = ?`
/// in another; no FIFO, no fencing check, no clock floor.
#[derive(Debug)]
pub struct Row(Connection);

impl Row {
    /// Opens `path` with WAL and `synchronous = sync` (as the engine does).
    pub fn open(path: &Path, sync: &str) -> Row {
        let conn = Connection::open(path).unwrap();
        conn.busy_timeout(Duration::from_secs(5)).unwrap();
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = {sync};
             CREATE TABLE IF NOT EXISTS lease (name TEXT PRIMARY KEY, owner TEXT,
                 token INTEGER NOT NULL, deadline INTEGER NOT NULL) WITHOUT ROWID;"
        ))
        .unwrap();
        Row(conn)
    }

    /// The token when granted, `None` when a live lease holds `name`.
    pub fn try_lock(&mut self, name: &str, owner: &str) -> Option<i64> {
        let tx = self
            .0
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        let now = now_us();
        let token = tx
            .prepare_cached(
                "INSERT INTO lease VALUES (?1, ?2, 1, ?3) ON CONFLICT (name) DO UPDATE
                 SET owner = excluded.owner, token = token + 1, deadline = excluded.deadline
                 WHERE deadline < ?4 RETURNING token",
            )
            .unwrap()
            .query_row((name, owner, now + TTL.as_micros() as i64, now), |r| {
                r.get(0)
            })
            .ok();
        tx.commit().unwrap();
        token
    }

    /// Frees `name` if lease `token` still has it.
    pub fn release(&mut self, name: &str, token: i64) -> bool {
        let tx = self
            .0
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        let n = tx
            .prepare_cached(
                "UPDATE lease SET owner = NULL, deadline = 0 WHERE name = ?1 AND token = ?2",
            )
            .unwrap()
            .execute((name, token))
            .unwrap();
        tx.commit().unwrap();
        n == 1
    }
}
