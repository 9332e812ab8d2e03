//! The sweeper: every store runs `<schema>.sweep()` now and then, so that the schema's rows
//! follow its live state (see `sql/sweep.sql`).

use std::sync::Weak;
use std::time::Duration;

use crate::pool::{Op, Pool};

/// How often a store sweeps the schema (`sweep.sql`: names unused for a minute are settled,
/// their dead waiters and free rows deleted, old marks of withdrawn waiters too).
const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// How many names one sweep call settles at most (its row locks are held until it commits, so
/// a call stays short; a full batch is followed by another at once).
const SWEEP_BATCH: i32 = 500;

/// Runs the sweep every [`SWEEP_EVERY`] while the store lives (best effort: a failed sweep
/// waits for the next turn).
pub(crate) fn spawn_sweeper<T: AsRef<Pool> + Send + Sync + 'static>(inner: Weak<T>) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(SWEEP_EVERY).await;
            loop {
                let Some(inner) = inner.upgrade() else { return };
                let pool: &Pool = (*inner).as_ref();
                let Ok(rows) = pool.call(Op::Sweep, &[&SWEEP_BATCH]).await else {
                    break;
                };
                let swept: i64 = rows.first().and_then(|r| r.try_get(0).ok()).unwrap_or(0);
                if swept < i64::from(SWEEP_BATCH) {
                    break;
                }
            }
        }
    });
}
