//! [`Fenced`]: the names a `try_lock` of this store found locked (a transaction holding
//! `fence()` on the row, SQLSTATE 55P03), shared by every call of the store, so that the
//! pollers of a fenced name send about as many statements as one of them would.
//!
//! A `try_lock` on a fenced name fails at once on the server (`FOR UPDATE NOWAIT`) and is
//! tried again after a pause, until the lock wait has passed. Without this, 64 tasks polling
//! one fenced name sent 64 statements at every step of their pauses (which start together
//! and so stay in step): each a failed statement on the server and an error to parse on the
//! client, thousands a second on the CPU that other names' calls need. With it, an attempt on
//! a name is not sent while another call's attempt on it, sent less than [`FRESH`] ago, is
//! in flight or was answered "locked": it counts as answered "locked" too (an attempt in
//! flight, whatever it finds, leaves nothing to this one either: the row locked, or the name
//! granted to that call, or held). Names are recorded only once found locked, and forgotten
//! at the first other answer, so calls on names nobody fences never wait on this.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// How recent another call's attempt on a name must be for an attempt to rely on it
/// instead of sending its own: the first pause of a `try_lock` that found its row locked.
pub(crate) const FRESH: Duration = Duration::from_millis(2);

/// Beyond this many names, the ones not tried for a lock wait are dropped when another is
/// recorded.
const PRUNE_ABOVE: usize = 64;

/// The names found locked, each with when an attempt on it was last sent.
#[derive(Default)]
pub(crate) struct Fenced {
    names: Mutex<HashMap<String, Instant>>,
    /// Whether `names` may be non-empty (read without the mutex on every `try_lock`).
    any: AtomicBool,
}

impl Fenced {
    fn names(&self) -> MutexGuard<'_, HashMap<String, Instant>> {
        self.names.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether an attempt on `name` may be sent now: false when another call's attempt on
    /// it, sent less than [`FRESH`] ago, is in flight or was answered "locked" (this one
    /// then counts as answered "locked"). When true and the name is recorded, the attempt
    /// about to be sent (at `now`) is marked as the latest.
    pub(crate) fn may_send(&self, name: &str, now: Instant) -> bool {
        if !self.any.load(Ordering::Acquire) {
            return true;
        }
        match self.names().get_mut(name) {
            Some(sent) if now.saturating_duration_since(*sent) < FRESH => false,
            Some(sent) => {
                *sent = now;
                true
            }
            None => true,
        }
    }

    /// An attempt on `name`, sent at `sent`, was answered "locked" (at `now`); names not
    /// tried for a `lock_wait` may be dropped meanwhile.
    pub(crate) fn locked(&self, name: &str, sent: Instant, now: Instant, lock_wait: Duration) {
        let mut names = self.names();
        if let Some(at) = names.get_mut(name) {
            *at = (*at).max(sent);
            return;
        }
        if names.len() >= PRUNE_ABOVE {
            names.retain(|_, at| now.saturating_duration_since(*at) < lock_wait);
        }
        names.insert(name.to_owned(), sent);
        self.any.store(true, Ordering::Release);
    }

    /// An attempt on `name` was answered otherwise (granted, busy, or failed): the row is
    /// not known to be locked any more.
    pub(crate) fn answered(&self, name: &str) {
        if !self.any.load(Ordering::Acquire) {
            return;
        }
        let mut names = self.names();
        names.remove(name);
        if names.is_empty() {
            self.any.store(false, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attempt_relies_on_a_fresh_locked_answer_only() {
        let fenced = Fenced::default();
        let (t0, wait) = (Instant::now(), Duration::from_millis(100));
        assert!(fenced.may_send("a", t0), "nothing recorded");
        fenced.locked("a", t0, t0, wait);
        assert!(
            !fenced.may_send("a", t0 + FRESH / 2),
            "found locked just now"
        );
        assert!(fenced.may_send("b", t0), "another name");
        assert!(fenced.may_send("a", t0 + FRESH), "no longer fresh: sent");
        let t1 = t0 + FRESH;
        assert!(
            !fenced.may_send("a", t1 + FRESH / 2),
            "the one sent is in flight"
        );
        // An earlier attempt answered late does not make the record older.
        fenced.locked("a", t0, t1, wait);
        assert!(!fenced.may_send("a", t1 + FRESH / 2));
        fenced.answered("a");
        assert!(fenced.may_send("a", t1), "answered otherwise: forgotten");
        assert!(fenced.may_send("a", t1));
        assert!(!fenced.any.load(Ordering::Acquire));
    }

    #[test]
    fn names_not_tried_for_a_lock_wait_are_pruned() {
        let fenced = Fenced::default();
        let (t0, wait) = (Instant::now(), Duration::from_millis(100));
        for i in 0..PRUNE_ABOVE {
            fenced.locked(&i.to_string(), t0, t0, wait);
        }
        assert_eq!(fenced.names().len(), PRUNE_ABOVE);
        fenced.locked("new", t0 + wait, t0 + wait, wait);
        assert_eq!(fenced.names().len(), 1);
        fenced.answered("new");
        assert!(!fenced.any.load(Ordering::Acquire));
    }
}
