//! IndexedDB: the connection (reopened when the browser closes it, once for all the
//! transactions waiting for it) and the start of one `readwrite` transaction per operation,
//! whose body ([`crate::tx::ops`]) runs synchronously in the success handler of its reads
//! (see `txn.rs`).

//!
//! Its transactions run one at a time, in call order: see `pipeline.rs`.

use core::cell::{Cell, RefCell};
use core::time::Duration;
use std::rc::{Rc, Weak};

use alkstore_mem::LockError;
use js_sys::Array;
use wasm_bindgen::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{DomException, Event, IdbDatabase, IdbRequest, IdbTransaction, IdbTransactionMode};

use super::basics::{Handler, LOCKS, META, describe};
use super::channel::Channel;
use super::clock::EngineClock;
use super::codec;
use super::open::open_db;
use super::pipeline::Lane;
use super::presence::{self, Presence};
use super::slot::Slot;
use super::txn::{self, Job, Pipeline, TxEnv, TxFuture};
use super::watchdog::{Watchdog, Watched};
use crate::sys::{Answer, Scope, TxError};
use crate::unavailable;

/// A transaction waiting for the connection to be opened again.
type Deferred = Box<dyn FnOnce(&Rc<Database>, Result<&IdbDatabase, &TxError>)>;

/// The open connection, reopened when the browser closed it (the database was deleted, an
/// upgrade elsewhere asked for it, or site data was cleared).
pub(crate) struct Database {
    pub(crate) name: String,
    pub(crate) io_timeout: Duration,
    pub(crate) channel: Channel,
    pub(crate) clock: Rc<EngineClock>,
    /// This context's presence Web Lock for the database, and the contexts known dead.
    pub(crate) presence: Rc<Presence>,
    pub(super) db: RefCell<Option<IdbDatabase>>,
    /// Transactions made while the connection is being opened again, in call order: they
    /// are sent, in that order, as soon as it is open (whether or not anyone polls them).
    waiting: RefCell<Vec<Deferred>>,
    reopening: Cell<bool>,
    /// This context's one transaction at a time on the database (see `pipeline.rs`), shared
    /// with every other store of the same database in this context.
    pub(super) lane: Rc<Lane>,
    /// How many connections the browser closed under this store: a lease granted before
    /// may have gone with a deleted database.
    generation: Cell<u64>,
    watchdog: Rc<Watchdog>,
    /// `["locks", "meta"]` and `"clock"`, made once (every transaction uses them).
    stores: Array,
    clock_key: JsValue,
    /// Closes the connection when another one wants to upgrade or delete the database.
    on_close: RefCell<Option<Handler>>,
    /// In a window: aborts the transactions in flight when the page unloads for good.
    on_unload: RefCell<Option<Handler>>,
}

impl Database {
    /// Opens (creating if needed) the database `name`.
    pub(crate) async fn open(
        name: &str,
        io_timeout: Duration,
        hold_presence: bool,
    ) -> Result<Rc<Self>, LockError> {
        let db = open_db(name, io_timeout).await?;
        // Held before anything of this context is written: a starting context never looks
        // dead.
        let wait_ms = io_timeout.as_secs_f64() * 1000.0;
        let presence = presence::presence(name, wait_ms, hold_presence).await;
        let channel = Channel::new(&format!("alkstore-idb:{name}"));
        presence.subscribe(channel.downgrade());
        let this = Rc::new(Database {
            name: name.into(),
            io_timeout,
            channel,
            presence,
            clock: Rc::new(EngineClock::new()),
            db: RefCell::new(None),
            waiting: RefCell::new(Vec::new()),
            reopening: Cell::new(false),
            lane: Lane::of(name),
            generation: Cell::new(0),
            watchdog: Watchdog::new(),
            stores: Array::of2(&JsValue::from_str(LOCKS), &JsValue::from_str(META)),
            clock_key: JsValue::from_str(codec::CLOCK),
            on_close: RefCell::new(None),
            on_unload: RefCell::new(None),
        });
        this.install(db);
        this.abort_on_unload();
        Ok(this)
    }

    /// In a window: when the page unloads for good (`pagehide`, `persisted` false: closed,
    /// navigated away without the back/forward cache), aborts this store's transactions in
    /// flight. One that is still running holds the database for every other context of the
    /// origin until the browser tears the page down, tens of milliseconds later; its answer
    /// would never be read. A page entering the back/forward cache keeps them.
    fn abort_on_unload(self: &Rc<Self>) {
        let global = js_sys::global();
        if !js_sys::Reflect::has(&global, &JsValue::from_str("onpagehide")).unwrap_or(false) {
            return; // a worker
        }
        let Ok(target) = global.dyn_into::<web_sys::EventTarget>() else {
            return;
        };
        let weak: Weak<Self> = Rc::downgrade(self);
        let handler = Closure::<dyn FnMut(Event)>::new(move |event: Event| {
            let persisted = js_sys::Reflect::get(&event, &JsValue::from_str("persisted"))
                .ok()
                .and_then(|p| p.as_bool())
                .unwrap_or(false);
            if let (false, Some(this)) = (persisted, weak.upgrade()) {
                this.lane.unload();
                this.watchdog.abandon_all();
            }
        });
        let f = handler.as_ref().unchecked_ref();
        if target
            .add_event_listener_with_callback("pagehide", f)
            .is_ok()
        {
            *self.on_unload.borrow_mut() = Some(handler);
        }
    }

    fn install(self: &Rc<Self>, db: IdbDatabase) {
        let weak: Weak<Self> = Rc::downgrade(self);
        let on_close = Closure::<dyn FnMut(Event)>::new(move |_: Event| {
            if let Some(this) = weak.upgrade() {
                this.closed();
            }
        });
        db.set_onversionchange(Some(on_close.as_ref().unchecked_ref()));
        db.set_onclose(Some(on_close.as_ref().unchecked_ref()));
        if let Some(old) = self.db.replace(Some(db)) {
            forget(&old);
        }
        *self.on_close.borrow_mut() = Some(on_close);
    }

    /// The browser closed the connection, or asked for it (another connection upgrades or
    /// deletes the database): let it go, and wake every sleeper of this context to look
    /// again (a lease may have gone with the database).
    fn closed(&self) {
        let db = self.db.borrow_mut().take();
        if let Some(db) = db {
            forget(&db);
        }
        self.generation.set(self.generation.get() + 1);
        self.channel.wake_local();
    }

    /// How many connections the browser closed under this store so far.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.get()
    }

    /// Creates the transaction on `db`, sends its reads and wires its handler.
    pub(super) fn start<R: 'static>(
        self: &Rc<Self>,
        db: &IdbDatabase,
        job: Job<R>,
        slot: Rc<Slot<Answer<R>>>,
    ) {
        match self.send_reads(db, &job.scope) {
            Ok((tx, requests)) => {
                let io = self.io_timeout;
                let pipeline: Rc<dyn Pipeline> = Rc::clone(&self.lane) as Rc<dyn Pipeline>;
                let env = TxEnv {
                    pipeline,
                    channel: &self.channel,
                    clock: &self.clock,
                    presence: &self.presence,
                    io,
                };
                let state = txn::run(tx, job, requests, slot, env);
                let state: Rc<dyn Watched> = state;
                self.watchdog
                    .watch(io.as_secs_f64() * 1000.0, Rc::downgrade(&state));
            }
            // Closing under us (the `versionchange` event is on its way): open again.
            Err(e) if is_closing(&e) => {
                self.closed();
                self.defer(job, slot);
            }
            Err(e) => {
                slot.fill(Err(TxError::failed(unavailable(format!(
                    "IndexedDB transaction refused: {}",
                    describe(&e)
                )))));
                self.lane.ended();
            }
        }
    }

    /// Queues `job` until the connection is open again, opening it if nobody is yet. The
    /// open runs on its own (`spawn_local`), so a release sent by a `Drop` still goes out.
    pub(super) fn defer<R: 'static>(self: &Rc<Self>, job: Job<R>, slot: Rc<Slot<Answer<R>>>) {
        self.waiting
            .borrow_mut()
            .push(Box::new(move |this, db| match db {
                Ok(db) => this.start(db, job, slot),
                Err(e) => {
                    slot.fill(Err(e.clone()));
                    this.lane.ended();
                }
            }));
        if self.reopening.replace(true) {
            return;
        }
        let this = Rc::clone(self);
        wasm_bindgen_futures::spawn_local(async move {
            let opened = open_db(&this.name, this.io_timeout).await;
            this.reopening.set(false);
            let waiting = core::mem::take(&mut *this.waiting.borrow_mut());
            match opened {
                Ok(db) => {
                    this.install(db.clone());
                    for job in waiting {
                        job(&this, Ok(&db));
                    }
                }
                Err(e) => {
                    // It cannot be opened now: what waits behind fails too.
                    this.lane.fail_backlog(&e);
                    for job in waiting {
                        job(&this, Err(&e));
                    }
                }
            }
        });
    }

    /// Creates the transaction and sends its reads.
    fn send_reads(
        &self,
        db: &IdbDatabase,
        scope: &Scope,
    ) -> Result<(IdbTransaction, Vec<IdbRequest>), JsValue> {
        let tx =
            db.transaction_with_str_sequence_and_mode(&self.stores, IdbTransactionMode::Readwrite)?;
        let meta = tx.object_store(META)?;
        let mut requests = vec![meta.get(&self.clock_key)?];
        match scope {
            Scope::Row(name) => {
                let locks = tx.object_store(LOCKS)?;
                requests.push(locks.get(&JsValue::from_str(name))?);
            }
            Scope::All => {
                let locks = tx.object_store(LOCKS)?;
                requests.push(locks.get_all()?);
            }
            Scope::Meta => {}
        }
        Ok((tx, requests))
    }
}

/// Whether `e` says the connection is closing (`InvalidStateError`).
fn is_closing(e: &JsValue) -> bool {
    e.dyn_ref::<DomException>()
        .is_some_and(|e| e.name() == "InvalidStateError")
}

/// Closes `db` after unhooking its handlers (their closure goes with the store).
fn forget(db: &IdbDatabase) {
    db.set_onversionchange(None);
    db.set_onclose(None);
    db.close();
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Some(db) = self.db.get_mut().take() {
            forget(&db);
        }
        if let Some(handler) = self.on_unload.get_mut().take() {
            if let Ok(target) = js_sys::global().dyn_into::<web_sys::EventTarget>() {
                let f = handler.as_ref().unchecked_ref();
                let _ = target.remove_event_listener_with_callback("pagehide", f);
            }
        }
    }
}

impl Database {
    /// Runs `job` in one `readwrite` transaction over the rows of its scope: created now if
    /// no transaction of this context is in flight on the database, else once the ones made
    /// before it have ended (see the module docs). Transactions run in the order of these
    /// calls, polled or not, across the stores of the database in this context; the
    /// returned future only waits for the answer.
    pub(crate) fn transact<R: 'static>(self: &Rc<Self>, job: Job<R>) -> TxFuture<R> {
        let slot = Slot::new();
        let answer = Rc::clone(&slot);
        let this = Rc::clone(self);
        self.lane.enqueue(Box::new(move |failed| match failed {
            None => this.launch(job, slot),
            Some(e) => slot.fill(Err(e.clone())),
        }));
        TxFuture(answer)
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
