//! [`CancelGuard`]: what a dropped `try_lock` or `acquire` future gives back.

use crate::store::IdbLocks;
use crate::tx::ops;

/// Gives back whatever a request was granted, when its future is dropped before its answer
/// was handed out: its ticket leaves the queue, and a lease granted to it ends.
pub(crate) struct CancelGuard {
    store: Option<IdbLocks>,
    name: String,
    id: String,
}

impl CancelGuard {
    pub(crate) fn new(store: &IdbLocks, name: &str, id: String) -> Self {
        CancelGuard {
            store: Some(store.clone()),
            name: name.into(),
            id,
        }
    }

    /// The answer was handed out: nothing to give back.
    pub(crate) fn disarm(&mut self) {
        self.store = None;
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if let Some(store) = self.store.take() {
            let id = core::mem::take(&mut self.id);
            // Sent now; it runs on its own (best effort: if it fails, a ticket expires with
            // its heartbeat and a lease at its deadline).
            drop(store.on_row(&self.name, move |row, cx| ops::cancel(row, cx, &id)));
        }
    }
}
