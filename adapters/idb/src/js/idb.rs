//! IndexedDB: opening the database, and running one `readwrite` transaction per operation
//! whose body ([`crate::tx::ops`]) runs synchronously in the success handler of its reads.

use core::cell::{Cell, RefCell};
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::rc::{Rc, Weak};

use alkstore_mem::LockError;
use alkstore_mem_web::TimeoutSleep;
use js_sys::{Array, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{
    DomException, Event, IdbDatabase, IdbFactory, IdbObjectStoreParameters, IdbOpenDbRequest,
    IdbRequest, IdbTransaction, IdbTransactionMode,
};

use super::channel::Channel;
use crate::sys::{Reading, Rows, Scope};
use crate::tx::ops::Ctx;
use crate::tx::row::Meta;
use crate::{codec_err, unavailable};

use super::codec;

/// The schema version: object stores `locks` (key path `name`) and `meta` (key path `key`,
/// one row: `clock`).
const SCHEMA_VERSION: u32 = 1;
const LOCKS: &str = "locks";
const META: &str = "meta";

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

/// The global scope's `indexedDB` (window or worker).
fn factory() -> Result<IdbFactory, LockError> {
    let global = js_sys::global();
    let value = Reflect::get(&global, &JsValue::from_str("indexedDB"))
        .map_err(|e| unavailable(format!("IndexedDB is not available here: {}", describe(&e))))?;
    if value.is_undefined() || value.is_null() {
        return Err(unavailable(
            "IndexedDB is not available in this context (no globalThis.indexedDB)",
        ));
    }
    value
        .dyn_into::<IdbFactory>()
        .map_err(|_| unavailable("globalThis.indexedDB is not an IDBFactory"))
}

/// A one-shot slot a JavaScript callback fills and a future waits on.
struct Slot<T> {
    value: RefCell<Option<T>>,
    waker: Cell<Option<Waker>>,
}

impl<T> Slot<T> {
    fn new() -> Rc<Self> {
        Rc::new(Slot {
            value: RefCell::new(None),
            waker: Cell::new(None),
        })
    }

    fn fill(&self, value: T) {
        let mut slot = self.value.borrow_mut();
        if slot.is_none() {
            *slot = Some(value);
        }
        drop(slot);
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }

    fn poll(&self, cx: &mut Context<'_>) -> Poll<T> {
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
    /// Closes the connection when another one wants to upgrade or delete the database.
    on_close: RefCell<Option<Closure<dyn FnMut(Event)>>>,
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
        let stores = Array::of2(&JsValue::from_str(LOCKS), &JsValue::from_str(META));
        let tx = db
            .transaction_with_str_sequence_and_mode(&stores, IdbTransactionMode::Readwrite)
            .map_err(fail)?;
        let meta = tx.object_store(META).map_err(fail)?;
        let mut requests = vec![meta.get(&JsValue::from_str(codec::CLOCK)).map_err(fail)?];
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
        body: Body<R>,
    ) -> TxFuture<R> {
        let state = Rc::new(TxState {
            slot: Slot::new(),
            job: RefCell::new(Some(Job {
                body,
                scope,
                requests: requests.clone(),
            })),
            pending: RefCell::new(None),
            failed: RefCell::new(None),
            handler: RefCell::new(None),
        });
        let handler = {
            let state = Rc::clone(&state);
            let tx = tx.clone();
            let channel = self.channel.clone();
            Closure::<dyn FnMut(Event)>::new(move |event: Event| {
                on_event(&state, &tx, &channel, &event.type_());
            })
        };
        let f = handler.as_ref().unchecked_ref();
        if let Some(last) = requests.last() {
            last.set_onsuccess(Some(f));
        }
        tx.set_oncomplete(Some(f));
        tx.set_onabort(Some(f));
        *state.handler.borrow_mut() = Some(handler);
        TxFuture::Running(Running {
            state,
            tx,
            timeout: None,
            io: self.io_timeout,
        })
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Some(db) = self.db.get_mut().take() {
            db.close();
        }
    }
}

type Body<R> = Box<dyn FnOnce(&mut Rows, &mut Ctx<'_>) -> R>;

struct Job<R> {
    body: Body<R>,
    scope: Scope,
    requests: Vec<IdbRequest>,
}

struct TxState<R> {
    slot: Rc<Slot<Result<(R, Reading), LockError>>>,
    job: RefCell<Option<Job<R>>>,
    /// The body's answer, handed out once the transaction committed.
    pending: RefCell<Option<(R, Reading, Vec<crate::tx::ops::Notice>)>>,
    /// Why the body refused to write (a malformed row): reported instead of the abort.
    failed: RefCell<Option<LockError>>,
    handler: RefCell<Option<Closure<dyn FnMut(Event)>>>,
}

fn on_event<R>(state: &TxState<R>, tx: &IdbTransaction, channel: &Channel, kind: &str) {
    match kind {
        "success" => {
            let Some(job) = state.job.borrow_mut().take() else {
                return;
            };
            if let Err(err) = decide(state, tx, job) {
                *state.failed.borrow_mut() = Some(err);
                let _ = tx.abort();
            }
        }
        "complete" => {
            let done = state.pending.borrow_mut().take();
            match done {
                Some((answer, reading, notices)) => {
                    for notice in &notices {
                        channel.post(notice);
                    }
                    state.slot.fill(Ok((answer, reading)));
                }
                None => state
                    .slot
                    .fill(Err(unavailable("IndexedDB committed without an answer"))),
            }
            // Dropped while it runs: wasm-bindgen frees it when this call returns.
            state.handler.borrow_mut().take();
        }
        "abort" => {
            let err = state.failed.borrow_mut().take().unwrap_or_else(|| {
                let why = tx
                    .error()
                    .map_or_else(|| "aborted".into(), |e| describe(&e));
                unavailable(format!("IndexedDB transaction failed: {why}"))
            });
            state.slot.fill(Err(err));
            state.handler.borrow_mut().take();
        }
        _ => {}
    }
}

/// The body of the transaction: decodes what was read, decides, writes what changed.
fn decide<R>(state: &TxState<R>, tx: &IdbTransaction, job: Job<R>) -> Result<(), LockError> {
    let result = |r: &IdbRequest| {
        r.result()
            .map_err(|e| unavailable(format!("IndexedDB read failed: {}", describe(&e))))
    };
    let meta_value = result(&job.requests[0])?;
    let mut meta = codec::decode_meta(&meta_value).map_err(|e| codec_err("meta", &e))?;
    let mut rows: Rows = Vec::new();
    match &job.scope {
        Scope::Row(name) => {
            let value = result(&job.requests[1])?;
            let row = codec::decode_row(&value).map_err(|e| codec_err(name, &e))?;
            rows.push((name.clone(), row));
        }
        Scope::All => {
            let values: Array = result(&job.requests[1])?.unchecked_into();
            for value in values.iter() {
                let name = codec::row_name(&value).map_err(|e| codec_err("(unnamed)", &e))?;
                let row = codec::decode_row(&value).map_err(|e| codec_err(&name, &e))?;
                rows.push((name, row));
            }
        }
        Scope::Meta => {}
    }
    let before_meta = meta;
    let before_rows = rows.clone();
    let mut cx = Ctx::new(&mut meta, date_now_us(), cfg!(feature = "test-clock"));
    let answer = (job.body)(&mut rows, &mut cx);
    let notices = core::mem::take(&mut cx.notices);
    let now = cx.now;
    drop(cx);
    write(tx, &before_rows, &rows, &before_meta, &meta)?;
    *state.pending.borrow_mut() = Some((
        answer,
        Reading {
            now,
            offset: meta.offset,
        },
        notices,
    ));
    Ok(())
}

/// Puts (or deletes) the rows that changed.
fn write(
    tx: &IdbTransaction,
    before: &Rows,
    after: &Rows,
    m0: &Meta,
    m1: &Meta,
) -> Result<(), LockError> {
    let fail = |e: JsValue| unavailable(format!("IndexedDB write failed: {}", describe(&e)));
    let changed_rows = after
        .iter()
        .filter(|(name, row)| before.iter().find(|(n, _)| n == name).map(|(_, r)| r) != Some(row))
        .peekable();
    let mut changed_rows = changed_rows;
    if changed_rows.peek().is_some() {
        let locks = tx.object_store(LOCKS).map_err(fail)?;
        for (name, row) in changed_rows {
            if row.is_empty() {
                locks.delete(&JsValue::from_str(name)).map_err(fail)?;
            } else {
                locks.put(&codec::encode_row(name, row)).map_err(fail)?;
            }
        }
    }
    if m0 != m1 {
        let meta = tx.object_store(META).map_err(fail)?;
        meta.put(&codec::encode_meta(m1)).map_err(fail)?;
    }
    Ok(())
}

/// The future of one transaction: its body's answer once it committed, or
/// [`LockError::Unavailable`].
#[must_use = "the transaction runs anyway; the future only waits for its answer"]
pub(crate) enum TxFuture<R: 'static> {
    Running(Running<R>),
    Later(Pin<Box<dyn Future<Output = Result<(R, Reading), LockError>>>>),
}

pub(crate) struct Running<R: 'static> {
    state: Rc<TxState<R>>,
    tx: IdbTransaction,
    timeout: Option<TimeoutSleep>,
    io: Duration,
}

impl<R> Future for TxFuture<R> {
    type Output = Result<(R, Reading), LockError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            TxFuture::Later(fut) => fut.as_mut().poll(cx),
            TxFuture::Running(run) => {
                if let Poll::Ready(out) = run.state.slot.poll(cx) {
                    return Poll::Ready(out);
                }
                let io = run.io;
                let timeout = run
                    .timeout
                    .get_or_insert_with(|| TimeoutSleep::new(io.as_secs_f64() * 1000.0));
                if Pin::new(timeout).poll(cx).is_ready() {
                    // Aborting a transaction that has not committed guarantees it changed
                    // nothing; one that is already committing cannot be aborted, and its
                    // answer is about to come: wait for it.
                    if run.tx.abort().is_ok() {
                        return Poll::Ready(Err(unavailable(format!(
                            "IndexedDB did not finish a transaction within {io:?} (another \
                             context of this origin may be stalled inside one)"
                        ))));
                    }
                    run.timeout = Some(TimeoutSleep::new(f64::from(i32::MAX)));
                }
                Poll::Pending
            }
        }
    }
}

/// Opens `name` at [`SCHEMA_VERSION`], creating the stores on first use.
async fn open_db(name: &str, io_timeout: Duration) -> Result<IdbDatabase, LockError> {
    let factory = factory()?;
    let request: IdbOpenDbRequest = factory.open_with_u32(name, SCHEMA_VERSION).map_err(|e| {
        unavailable(format!(
            "IndexedDB refused to open {name:?}: {}",
            describe(&e)
        ))
    })?;
    let slot: Rc<Slot<Result<IdbDatabase, LockError>>> = Slot::new();
    let blocked = Rc::new(Cell::new(false));
    let abandoned = Rc::new(Cell::new(false));
    let handlers: Rc<RefCell<Option<Closure<dyn FnMut(Event)>>>> = Rc::new(RefCell::new(None));
    let handler = {
        let (slot, blocked, abandoned, handlers) = (
            Rc::clone(&slot),
            Rc::clone(&blocked),
            Rc::clone(&abandoned),
            Rc::clone(&handlers),
        );
        let request = request.clone();
        let name = name.to_owned();
        Closure::<dyn FnMut(Event)>::new(move |event: Event| match event.type_().as_str() {
            "upgradeneeded" => {
                if let Err(err) = create_stores(&request) {
                    slot.fill(Err(err));
                    if let Some(tx) = request.transaction() {
                        let _ = tx.abort();
                    }
                }
            }
            "blocked" => blocked.set(true),
            "success" => {
                handlers.borrow_mut().take();
                match request.result().map(JsCast::unchecked_into::<IdbDatabase>) {
                    Ok(db) if abandoned.get() => db.close(),
                    Ok(db) => slot.fill(Ok(db)),
                    Err(e) => slot.fill(Err(unavailable(describe(&e)))),
                }
            }
            "error" => {
                handlers.borrow_mut().take();
                let why = request
                    .error()
                    .ok()
                    .flatten()
                    .map_or_else(|| "unknown error".into(), |e| describe(&e));
                slot.fill(Err(unavailable(format!(
                    "IndexedDB could not open {name:?}: {why}"
                ))));
            }
            _ => {}
        })
    };
    let f = handler.as_ref().unchecked_ref();
    request.set_onupgradeneeded(Some(f));
    request.set_onblocked(Some(f));
    request.set_onsuccess(Some(f));
    request.set_onerror(Some(f));
    *handlers.borrow_mut() = Some(handler);
    let mut timeout = TimeoutSleep::new(io_timeout.as_secs_f64() * 1000.0);
    core::future::poll_fn(|cx| {
        if let Poll::Ready(out) = slot.poll(cx) {
            return Poll::Ready(out);
        }
        if Pin::new(&mut timeout).poll(cx).is_ready() {
            abandoned.set(true);
            let why = if blocked.get() {
                "it is blocked: another tab or worker holds it open at an older version and does \
                 not close it"
            } else {
                "it did not open in time"
            };
            return Poll::Ready(Err(unavailable(format!(
                "IndexedDB database {name:?} not opened within {io_timeout:?}: {why}"
            ))));
        }
        Poll::Pending
    })
    .await
}

fn create_stores(request: &IdbOpenDbRequest) -> Result<(), LockError> {
    let fail = |e: JsValue| unavailable(format!("IndexedDB upgrade failed: {}", describe(&e)));
    let db: IdbDatabase = request.result().map_err(fail)?.unchecked_into();
    let names = db.object_store_names();
    for (store, key) in [(LOCKS, "name"), (META, "key")] {
        if !names.contains(store) {
            let params = IdbObjectStoreParameters::new();
            params.set_key_path(&JsValue::from_str(key));
            db.create_object_store_with_optional_parameters(store, &params)
                .map_err(fail)?;
        }
    }
    Ok(())
}
