//! IndexedDB: the connection (reopened when the browser closes it) and the start of one
//! `readwrite` transaction per operation, whose body ([`crate::tx::ops`]) runs synchronously in
//! the success handler of its reads (see `txn.rs`).

use core::cell::{Cell, RefCell};
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::rc::{Rc, Weak};

use alkstore_mem::LockError;
use js_sys::Array;
use wasm_bindgen::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{DomException, Event, IdbDatabase, IdbRequest, IdbTransaction, IdbTransactionMode};

use super::channel::Channel;
use super::codec;
use super::open::open_db;
use super::txn::{self, Job, TxFuture};
use super::watchdog::Watchdog;
use crate::sys::{Rows, Scope};
use crate::tx::ops::Ctx;
use crate::unavailable;

/// An event handler kept alive by its owner.
pub(crate) type Handler = Closure<dyn FnMut(Event)>;

pub(crate) const LOCKS: &str = "locks";
pub(crate) const META: &str = "meta";

/// `Date.now()` in µs.
pub(crate) fn date_now_us() -> u64 {
    let ms = js_sys::Date::now();
    if ms > 0.0 { (ms * 1000.0) as u64 } else { 0 }
}

/// A JavaScript error as text: `Name: message` for a `DOMException`.
pub(crate) fn describe(value: &JsValue) -> String {
    if let Some(e) = value.dyn_ref::<DomException>() {
        return format!("{}: {}", e.name(), e.message());
    }
    if let Some(e) = value.dyn_ref::<js_sys::Error>() {
        return format!("{}: {}", String::from(e.name()), String::from(e.message()));
    }
    value.as_string().unwrap_or_else(|| format!("{value:?}"))
}

/// A one-shot slot a JavaScript callback fills and a future waits on.
pub(crate) struct Slot<T> {
    value: RefCell<Option<T>>,
    waker: Cell<Option<Waker>>,
}

impl<T> Slot<T> {
    pub(crate) fn new() -> Rc<Self> {
        Rc::new(Slot {
            value: RefCell::new(None),
            waker: Cell::new(None),
        })
    }

    pub(crate) fn fill(&self, value: T) {
        let mut slot = self.value.borrow_mut();
        if slot.is_none() {
            *slot = Some(value);
        }
        drop(slot);
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }

    pub(crate) fn poll(&self, cx: &mut Context<'_>) -> Poll<T> {
        match self.value.borrow_mut().take() {
            Some(value) => Poll::Ready(value),
            None => {
                self.waker.set(Some(cx.waker().clone()));
                Poll::Pending
            }
        }
    }
}

/// The open connection, reopened when the browser closed it (the database was deleted, an
/// upgrade elsewhere asked for it, or site data was cleared).
pub(crate) struct Database {
    pub(crate) name: String,
    pub(crate) io_timeout: Duration,
    pub(crate) channel: Channel,
    db: RefCell<Option<IdbDatabase>>,
    watchdog: Rc<Watchdog>,
    /// `["locks", "meta"]` and `"clock"`, made once (every transaction uses them).
    stores: Array,
    clock_key: JsValue,
    /// Closes the connection when another one wants to upgrade or delete the database.
    on_close: RefCell<Option<Handler>>,
}

impl Database {
    /// Opens (creating if needed) the database `name`.
    pub(crate) async fn open(name: &str, io_timeout: Duration) -> Result<Rc<Self>, LockError> {
        let db = open_db(name, io_timeout).await?;
        let this = Rc::new(Database {
            name: name.into(),
            io_timeout,
            channel: Channel::new(&format!("alkstore-idb:{name}")),
            db: RefCell::new(None),
            watchdog: Watchdog::new(),
            stores: Array::of2(&JsValue::from_str(LOCKS), &JsValue::from_str(META)),
            clock_key: JsValue::from_str(codec::CLOCK),
            on_close: RefCell::new(None),
        });
        this.install(db);
        Ok(this)
    }

    fn install(self: &Rc<Self>, db: IdbDatabase) {
        let weak: Weak<Self> = Rc::downgrade(self);
        let on_close = Closure::<dyn FnMut(Event)>::new(move |_: Event| {
            if let Some(this) = weak.upgrade() {
                if let Some(db) = this.db.borrow_mut().take() {
                    db.close();
                }
            }
        });
        db.set_onversionchange(Some(on_close.as_ref().unchecked_ref()));
        db.set_onclose(Some(on_close.as_ref().unchecked_ref()));
        if let Some(old) = self.db.replace(Some(db)) {
            old.close();
        }
        *self.on_close.borrow_mut() = Some(on_close);
    }

    /// Runs `body` in one `readwrite` transaction over the rows of `scope`. The transaction is
    /// created now, so transactions run in the order of these calls; the returned future
    /// only waits for it (dropping it leaves the transaction to finish on its own).
    pub(crate) fn transact<R, B>(self: &Rc<Self>, scope: Scope, body: B) -> TxFuture<R>
    where
        R: 'static,
        B: FnOnce(&mut Rows, &mut Ctx<'_>) -> R + 'static,
    {
        let started = self.db.borrow().as_ref().map(|db| self.start(db, &scope));
        match started {
            Some(Ok((tx, requests))) => self.run(tx, requests, scope, Box::new(body)),
            // Closed by the browser (or never reopened): open again, then run.
            _ => {
                let this = Rc::clone(self);
                TxFuture::Later(Box::pin(async move {
                    let db = open_db(&this.name, this.io_timeout).await?;
                    this.install(db.clone());
                    let (tx, requests) = this.start(&db, &scope)?;
                    this.run(tx, requests, scope, Box::new(body)).await
                }))
            }
        }
    }

    /// Creates the transaction and sends its reads.
    fn start(
        &self,
        db: &IdbDatabase,
        scope: &Scope,
    ) -> Result<(IdbTransaction, Vec<IdbRequest>), LockError> {
        let fail =
            |e: JsValue| unavailable(format!("IndexedDB transaction refused: {}", describe(&e)));
        let tx = db
            .transaction_with_str_sequence_and_mode(&self.stores, IdbTransactionMode::Readwrite)
            .map_err(fail)?;
        let meta = tx.object_store(META).map_err(fail)?;
        let mut requests = vec![meta.get(&self.clock_key).map_err(fail)?];
        match scope {
            Scope::Row(name) => {
                let locks = tx.object_store(LOCKS).map_err(fail)?;
                requests.push(locks.get(&JsValue::from_str(name)).map_err(fail)?);
            }
            Scope::All => {
                let locks = tx.object_store(LOCKS).map_err(fail)?;
                requests.push(locks.get_all().map_err(fail)?);
            }
            Scope::Meta => {}
        }
        Ok((tx, requests))
    }

    fn run<R: 'static>(
        &self,
        tx: IdbTransaction,
        requests: Vec<IdbRequest>,
        scope: Scope,
        body: txn::Body<R>,
    ) -> TxFuture<R> {
        let job = Job {
            body,
            scope,
            requests,
        };
        let (future, state) = txn::run(tx, job, &self.channel, self.io_timeout);
        let deadline = js_sys::Date::now() + self.io_timeout.as_secs_f64() * 1000.0;
        let state: Rc<dyn super::watchdog::Watched> = state;
        self.watchdog.watch(deadline, Rc::downgrade(&state));
        future
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Some(db) = self.db.get_mut().take() {
            db.close();
        }
    }
}
