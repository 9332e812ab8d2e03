//! One transaction at a time per context and database: a [`Lane`], shared by every store
//! of the database in this context (so that calls on two stores keep their order).
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

use core::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::{Rc, Weak};

use super::txn::Pipeline;
use crate::sys::TxError;
use crate::unavailable;

/// A transaction waiting for the one in flight to end: started with `None`, failed with the
/// error. It holds its store's database, so that it runs even if the store is dropped.
pub(crate) type Queued = Box<dyn FnOnce(Option<&TxError>)>;

thread_local! {
    /// The lanes of this context, by database name.
    static LANES: RefCell<HashMap<String, Weak<Lane>>> = RefCell::new(HashMap::new());
}

/// This context's transactions on one database, one at a time, in call order.
#[derive(Default)]
pub(crate) struct Lane {
    backlog: RefCell<VecDeque<Queued>>,
    /// A transaction is in flight (or waiting for its connection to open again).
    busy: Cell<bool>,
    /// `pump` is running (it is not re-entered).
    pumping: Cell<bool>,
    /// The page is unloading for good: no transaction starts any more.
    unloading: Cell<bool>,
}

impl Lane {
    /// The lane of database `name` in this context (made on first use).
    pub(crate) fn of(name: &str) -> Rc<Lane> {
        LANES.with(|lanes| {
            let mut lanes = lanes.borrow_mut();
            if let Some(lane) = lanes.get(name).and_then(Weak::upgrade) {
                return lane;
            }
            lanes.retain(|_, lane| lane.strong_count() > 0);
            let lane = Rc::new(Lane::default());
            lanes.insert(name.to_owned(), Rc::downgrade(&lane));
            lane
        })
    }

    /// Adds `queued` to the backlog (in call order) and starts it at once if no
    /// transaction of this context is in flight on the database.
    pub(crate) fn enqueue(&self, queued: Queued) {
        self.backlog.borrow_mut().push_back(queued);
        self.pump();
    }

    /// Starts the next transaction of the backlog unless one is in flight. Not re-entered:
    /// a transaction that fails at once while it starts lets this loop go on.
    fn pump(&self) {
        if self.pumping.replace(true) {
            return;
        }
        while !self.busy.get() {
            let Some(next) = self.backlog.borrow_mut().pop_front() else {
                break;
            };
            if self.unloading.get() {
                next(Some(&TxError::failed(unavailable("the page is unloading"))));
            } else {
                // Sets `busy` back (and pumps again) when it ends, at once if it fails now.
                self.busy.set(true);
                next(None);
            }
        }
        self.pumping.set(false);
    }

    /// Fails every transaction of the backlog with `error`.
    pub(crate) fn fail_backlog(&self, error: &TxError) {
        let queued = core::mem::take(&mut *self.backlog.borrow_mut());
        for job in queued {
            job(Some(error));
        }
    }

    /// The transaction in flight ended: the next one may start.
    pub(crate) fn ended(&self) {
        self.busy.set(false);
        self.pump();
    }

    /// The page unloads for good: the backlog fails, and nothing starts from now on.
    pub(crate) fn unload(&self) {
        self.unloading.set(true);
        self.fail_backlog(&TxError::failed(unavailable(
            "the page is unloading: its transaction was not sent",
        )));
    }
}

impl Pipeline for Lane {
    fn finished(&self) {
        self.ended();
    }

    fn timed_out(&self, error: &TxError) {
        self.fail_backlog(error);
    }
}
