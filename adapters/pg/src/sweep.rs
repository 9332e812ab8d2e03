//! The sweeper: every store runs `<schema>.sweep()` now and then, so that the schema's rows
//! follow its live state (see `sql/sweep.sql`).

use std::sync::Weak;
use std::time::Duration;

use tokio::task::AbortHandle;

use crate::op::Op;
use crate::pool::Pool;

/// How often a store sweeps the schema (`sweep.sql`: names unused for a minute are settled,
/// their dead waiters and free rows deleted, old marks of withdrawn waiters too).
const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// How many names one sweep call settles at most (its row locks are held until it commits, so
/// a call stays short; a full batch is followed by another at once).
const SWEEP_BATCH: i32 = 500;

/// Runs the sweep every [`SWEEP_EVERY`] on the current runtime while the pool lives (best
/// effort: a failed sweep waits for the next turn). The engine aborts it when dropped.
pub(crate) fn spawn_sweeper(pool: Weak<Pool>) -> AbortHandle {
    let task = tokio::spawn(async move {
        loop {
            tokio::time::sleep(SWEEP_EVERY).await;
            loop {
                let Some(pool) = pool.upgrade() else { return };
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
    task.abort_handle()
}
