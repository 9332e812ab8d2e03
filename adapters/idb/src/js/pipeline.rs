//! One transaction at a time per context and database.
//!
//! Every transaction covers both stores, so IndexedDB runs them one at a time anyway. This
//! context creates its next one when the one before has ended, and keeps the others in a
//! FIFO backlog meanwhile (in call order: the order IndexedDB would have run them in). So
//! the `io_timeout` of a transaction counts from when it could start, behind other
//! contexts' transactions only: a burst of a thousand calls in one context runs them all,
//! where creating them at once made the last ones time out behind this context's own. When
//! the transaction in flight times out (the database is stalled by another context), the
//! backlog fails at once with the same error, as it would have done waiting behind it; so it
//! does when the connection cannot be opened again, and when the page unloads.

use std::rc::Rc;

use super::idb::Database;
use super::slot::Slot;
use super::txn::{Job, Pipeline, TxFuture};
use crate::sys::{Answer, TxError};
use crate::unavailable;

impl Database {
    /// Runs `job` in one `readwrite` transaction over the rows of its scope: created now if
    /// no transaction of this context is in flight, else once the ones made before it have
    /// ended (see the module docs). Transactions run in the order of these calls, polled or
    /// not; the returned future only waits for the answer.
    pub(crate) fn transact<R: 'static>(self: &Rc<Self>, job: Job<R>) -> TxFuture<R> {
        let slot = Slot::new();
        let answer = Rc::clone(&slot);
        self.backlog
            .borrow_mut()
            .push_back(Box::new(move |this, failed| match failed {
                None => this.launch(job, slot),
                Some(e) => slot.fill(Err(e.clone())),
            }));
        self.pump();
        TxFuture(answer)
    }

    /// Starts the next transaction of the backlog unless one is in flight. Not re-entered:
    /// a transaction that fails at once while it starts one lets this loop go on.
    fn pump(self: &Rc<Self>) {
        if self.pumping.replace(true) {
            return;
        }
        while !self.busy.get() {
            let Some(next) = self.backlog.borrow_mut().pop_front() else {
                break;
            };
            self.busy.set(true);
            if self.unloading.get() {
                self.busy.set(false);
                next(
                    self,
                    Some(&TxError::failed(unavailable("the page is unloading"))),
                );
            } else {
                // Sets `busy` back (and pumps again) when it ends, at once if it fails now.
                next(self, None);
            }
        }
        self.pumping.set(false);
    }

    /// Fails every transaction of the backlog with `error`.
    pub(super) fn fail_backlog(self: &Rc<Self>, error: &TxError) {
        let queued = core::mem::take(&mut *self.backlog.borrow_mut());
        for job in queued {
            job(self, Some(error));
        }
    }

    /// The transaction in flight ended: the next one may start.
    pub(super) fn ended(self: &Rc<Self>) {
        self.busy.set(false);
        self.pump();
    }

    /// Creates the transaction now, or once the connection is open again.
    fn launch<R: 'static>(self: &Rc<Self>, job: Job<R>, slot: Rc<Slot<Answer<R>>>) {
        let db = self.db.borrow().clone();
        match db {
            Some(db) => self.start(&db, job, slot),
            None => self.defer(job, slot),
        }
    }
}

impl Pipeline for Database {
    fn finished(&self) {
        if let Some(this) = self.this.upgrade() {
            this.ended();
        }
    }

    fn timed_out(&self, error: &TxError) {
        if let Some(this) = self.this.upgrade() {
            this.fail_backlog(error);
        }
    }
}
