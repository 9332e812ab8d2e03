//! [`Op`]: the calls the engine makes, each one prepared statement.

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
    Sweep,
    #[cfg(feature = "test-clock")]
    AdvanceClock,
}

impl Op {
    pub(crate) const COUNT: usize = 11;

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The statement's text for `schema`.
    pub(crate) fn sql(self, schema: &Schema) -> String {
        let s = &schema.ident;
        match self {
            Op::TryLock => schema.fast("try_lock_fast"),
            Op::Release => schema.fast("release_fast"),

            Op::Sweep => format!("SELECT {s}.sweep($1)"),
            Op::Acquire => format!("SELECT {s}.acquire($1, $2, $3, $4, $5, $6, $7)"),
            Op::Cancel => format!("SELECT {s}.cancel($1, $2, $3)"),
            Op::Renew => format!("SELECT {s}.renew($1, $2, $3)"),
            Op::IsHeld => format!("SELECT {s}.is_held($1, $2)"),
            Op::Holder => format!("SELECT * FROM {s}.holder($1)"),
            Op::Snapshot => format!("SELECT * FROM {s}.snapshot_page($1, $2, $3, $4)"),
            Op::ForceRelease => format!("SELECT * FROM {s}.force_release($1)"),
            #[cfg(feature = "test-clock")]
            Op::AdvanceClock => format!("SELECT {s}.advance_test_clock($1)"),
        }
    }

    /// Whether running it twice (after a connection died before its reply came) is safe:
    /// everything but release and force_release, whose second run would answer as if the
    /// lease had not been live.
    pub(crate) fn retryable(self) -> bool {
        !matches!(self, Op::Release | Op::ForceRelease)
    }

    /// Whether a call that failed with SQLSTATE 55P03 (a row or lock held beyond the lock
    /// wait: its transaction rolled back, nothing of it happened) is tried again, within
    /// the same `io_timeout`. Not for `try_lock` (busy is its answer), `acquire` (its wait
    /// loop pauses and steps again) and `force_release` (which refuses a fenced name with
    /// 55P03 on purpose). For the others a row is held that long only by a transaction
    /// stalled on a loaded machine, and giving up would leave a release, a renewal or a
    /// withdrawal undone.
    pub(crate) fn retries_locked(self) -> bool {
        !matches!(self, Op::TryLock | Op::Acquire | Op::ForceRelease)
    }

    /// Whether callers make it in a loop against a busy name (a `try_lock` poller, a waiting
    /// `acquire`'s steps): these never use the pool's last connection (of two or more), so
    /// that however many poll, a holder's renewals and releases, withdrawals and reads find
    /// a connection that no poller queues on.
    pub(crate) fn polls(self) -> bool {
        matches!(self, Op::TryLock | Op::Acquire)
    }

    /// Every operation, in discriminant order.
    pub(crate) fn all() -> impl Iterator<Item = Op> {
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
            Op::Sweep,
            #[cfg(feature = "test-clock")]
            Op::AdvanceClock,
        ]
        .into_iter()
    }
}
