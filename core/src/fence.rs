//! [`Fence`]: the guarded resource's side of fencing, the same for every engine.

use core::sync::atomic::{AtomicU64, Ordering};

/// The guarded resource's side of fencing: it keeps the highest fencing token it has seen
/// and refuses a write that carries a lower one.
///
/// A lock alone cannot stop a holder that stalled past its lease (a long pause, a slow
/// network) from writing after someone else took over: the stale holder does not know yet.
/// Fencing closes that gap at the resource: every write carries its lease's
/// [`token`](crate::LockHandle::token), tokens strictly increase with every grant, and the
/// resource keeps a `Fence` beside its data and calls [`check`](Self::check) in the same
/// critical section as the write.
///
/// # What it promises, and what it does not
/// - A token **lower** than one the fence has already accepted is refused
///   ([`StaleToken`], naming both). Once a newer holder has written, the old holder can
///   never write again.
/// - A token **equal to or higher** than the highest seen is accepted and recorded: the same
///   holder may write many times, and a newer holder's first write locks out all older ones.
/// - It does **not** know whether a lease is live. A stale holder whose successor has not
///   written yet still gets through: that write is ordered before the successor's, and the
///   successor sees its effect, exactly as if the stale holder had been a little faster.
///   If a write must never land after its lease lapsed, check liveness in the resource
///   itself (the PostgreSQL engine's `fence()` does, inside the writer's transaction).
/// - One fence guards one resource (or one set of resources written together), fed by one
///   store: tokens of different stores (or namespaces) are not comparable.
/// - The check and the write must be atomic together: call `check` under the same lock or
///   transaction as the write, or a stale write can slip between them.
///
/// `no_std`, lock-free (one atomic), `Send + Sync`.
///
/// # Example
/// ```
/// use alkstore_mem::{Fence, LockRegistry, ManualClock};
/// use core::time::Duration;
///
/// let clock = ManualClock::new();
/// let registry = LockRegistry::new(clock.clone());
/// let fence = Fence::new(); // kept beside the data the lock protects
///
/// let stalled = registry.try_lock("invoice/1001", "worker-a", Duration::from_secs(5))?.unwrap();
/// clock.advance(Duration::from_secs(6)); // worker-a pauses past its lease
/// let next = registry.try_lock("invoice/1001", "worker-b", Duration::from_secs(5))?.unwrap();
///
/// assert!(fence.check(next.token()).is_ok(), "worker-b writes first");
/// let refused = fence.check(stalled.token()).unwrap_err(); // worker-a's late write
/// assert_eq!((refused.token, refused.highest), (stalled.token(), next.token()));
/// # Ok::<(), alkstore_mem::LockError>(())
/// ```
#[derive(Debug, Default)]
pub struct Fence {
    /// The highest token accepted so far; zero before the first (tokens start at one).
    highest: AtomicU64,
}

impl Fence {
    /// A fence that has seen no token yet: it accepts any.
    pub const fn new() -> Self {
        Fence {
            highest: AtomicU64::new(0),
        }
    }

    /// A fence that has already accepted `highest`: how a resource restores its fence from
    /// the highest token it stored beside its data (a column, a file header), so that the
    /// fence outlives the process. A resource shared by several processes keeps that token
    /// in its own storage and compares there, inside the write's transaction, exactly as
    /// [`check`](Self::check) does (`UPDATE .. SET token = $t WHERE token <= $t`); a `Fence`
    /// in memory guards the writes of one process only.
    ///
    /// # Example
    /// ```
    /// use alkstore_mem::Fence;
    ///
    /// let stored = 41; // read back with the data
    /// let fence = Fence::with_highest(stored);
    /// assert!(fence.check(40).is_err(), "an older holder stays refused after a restart");
    /// assert!(fence.check(41).is_ok());
    /// assert_eq!(fence.highest(), Some(41));
    /// ```
    pub const fn with_highest(highest: u64) -> Self {
        Fence {
            highest: AtomicU64::new(highest),
        }
    }

    /// Accepts `token` if it is at least the highest token seen, and records it; refuses a
    /// lower one with [`StaleToken`], changing nothing.
    ///
    /// # Errors
    /// [`StaleToken`] when a higher token was accepted before.
    pub fn check(&self, token: u64) -> Result<(), StaleToken> {
        let before = self.highest.fetch_max(token, Ordering::AcqRel);
        if token >= before {
            Ok(())
        } else {
            Err(StaleToken {
                token,
                highest: before,
            })
        }
    }

    /// The highest token accepted so far, if any.
    pub fn highest(&self) -> Option<u64> {
        match self.highest.load(Ordering::Acquire) {
            0 => None,
            token => Some(token),
        }
    }
}

/// A write refused by a [`Fence`]: its token is lower than one the fence already accepted,
/// so a newer holder of the lock has written since.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[error(
    "stale fencing token {token}: the resource has already accepted token {highest} from a newer holder"
)]
#[non_exhaustive]
pub struct StaleToken {
    /// The refused token.
    pub token: u64,
    /// The highest token the fence had accepted.
    pub highest: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn accepts_equal_and_higher_tokens_and_refuses_lower_ones() {
        let fence = Fence::default();
        assert_eq!(fence.highest(), None);
        assert!(fence.check(5).is_ok());
        assert!(fence.check(5).is_ok(), "the same holder writes again");
        assert!(fence.check(9).is_ok());
        let err = fence.check(7).unwrap_err();
        assert_eq!((err.token, err.highest), (7, 9));
        assert_eq!(fence.highest(), Some(9), "a refusal changes nothing");
        assert_eq!(
            err.to_string(),
            "stale fencing token 7: the resource has already accepted token 9 from a newer holder"
        );
        assert!(fence.check(u64::MAX).is_ok());
        assert!(fence.check(u64::MAX - 1).is_err());
    }

    #[test]
    fn racing_threads_never_see_a_lower_token_accepted_after_a_higher_one() {
        use alloc::sync::Arc;
        use alloc::vec::Vec;
        let fence = Arc::new(Fence::new());
        let accepted = Arc::new(std::sync::Mutex::new(Vec::new()));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let (fence, accepted) = (Arc::clone(&fence), Arc::clone(&accepted));
                std::thread::spawn(move || {
                    for i in 0..10_000u64 {
                        let token = i * 4 + t + 1;
                        let mut log = accepted.lock().unwrap();
                        if fence.check(token).is_ok() {
                            log.push(token);
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let log = accepted.lock().unwrap();
        assert!(log.windows(2).all(|w| w[0] <= w[1]), "accepted in order");
        assert_eq!(fence.highest(), log.last().copied());
    }
}
