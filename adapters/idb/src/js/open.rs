//! Opening the database: the global scope's `indexedDB`, the stores created on first use
//! (with a version bump when a database of that name exists without them), a schema that
//! is not ours refused, a connection blocked by another one, and a bound on the whole.

use core::cell::{Cell, RefCell};
use core::pin::Pin;
use core::task::Poll;
use core::time::Duration;
use std::rc::Rc;

use alkstore_mem::LockError;
use alkstore_mem_web::TimeoutSleep;
use js_sys::{Array, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Event, IdbDatabase, IdbFactory, IdbObjectStoreParameters, IdbOpenDbRequest};

use super::basics::{Handler, LOCKS, META, describe};
use super::slot::Slot;
use crate::sys::TxError;
use crate::unavailable;

/// The object stores and their key paths: `locks` (one row per name) and `meta` (one row,
/// `clock`). The database's version number does not matter: any version that has both
/// stores with these key paths is ours (another library may share the database and upgrade
/// it); one without them gets them with the next version.
const STORES: [(&str, &str); 2] = [(LOCKS, "name"), (META, "key")];

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

/// What the schema check found.
enum Schema {
    Ours,
    /// A store is missing (a database of that name made by `indexedDB.open(name)` alone, or
    /// by other code): create it with the next version.
    Missing,
    /// A store exists with another key path: not ours to change.
    Foreign(String),
}

/// Opens `name` (creating it, or the stores it lacks, on first use), within `io_timeout`.
pub(crate) async fn open_db(name: &str, io_timeout: Duration) -> Result<IdbDatabase, TxError> {
    let factory = factory().map_err(TxError::failed)?;
    let mut timeout = TimeoutSleep::new(io_timeout.as_secs_f64() * 1000.0);
    let mut version = None;
    // Three tries at most: another context may be creating the stores at the same moment.
    for _ in 0..3 {
        let db = request(&factory, name, version, io_timeout, &mut timeout).await?;
        match schema(&db) {
            Schema::Ours => return Ok(db),
            Schema::Missing => {
                version = Some(db.version() + 1.0);
                db.close();
            }
            Schema::Foreign(why) => {
                db.close();
                return Err(TxError::failed(unavailable(format!(
                    "IndexedDB database {name:?} was not made by alkstore-idb: {why}"
                ))));
            }
        }
    }
    Err(TxError::failed(unavailable(format!(
        "IndexedDB database {name:?}: its object stores could not be created"
    ))))
}

/// Whether `db` has our stores, with our key paths.
fn schema(db: &IdbDatabase) -> Schema {
    let names = db.object_store_names();
    if STORES.iter().any(|(store, _)| !names.contains(store)) {
        return Schema::Missing;
    }
    let stores = Array::of2(&JsValue::from_str(LOCKS), &JsValue::from_str(META));
    let tx = match db.transaction_with_str_sequence(&stores) {
        Ok(tx) => tx,
        Err(e) => return Schema::Foreign(describe(&e)),
    };
    for (store, key) in STORES {
        let path = tx.object_store(store).and_then(|s| s.key_path());
        match path {
            Ok(path) if path.as_string().as_deref() == Some(key) => {}
            Ok(path) => {
                return Schema::Foreign(format!(
                    "its store {store:?} has the key path {path:?}, not {key:?}"
                ));
            }
            Err(e) => return Schema::Foreign(describe(&e)),
        }
    }
    Schema::Ours
}

/// One open request (at `version`, or the current one), creating missing stores if it
/// upgrades, raced against the shared `timeout`.
async fn request(
    factory: &IdbFactory,
    name: &str,
    version: Option<f64>,
    io_timeout: Duration,
    timeout: &mut TimeoutSleep,
) -> Result<IdbDatabase, TxError> {
    let request: IdbOpenDbRequest = match version {
        Some(v) => factory.open_with_f64(name, v),
        None => factory.open(name),
    }
    .map_err(|e| {
        TxError::failed(unavailable(format!(
            "IndexedDB refused to open {name:?}: {}",
            describe(&e)
        )))
    })?;
    let slot: Rc<Slot<Result<IdbDatabase, LockError>>> = Slot::new();
    let blocked = Rc::new(Cell::new(false));
    let abandoned = Rc::new(Cell::new(false));
    let handlers: Rc<RefCell<Option<Handler>>> = Rc::new(RefCell::new(None));
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
    core::future::poll_fn(|cx| {
        if let Poll::Ready(out) = slot.poll(cx) {
            return Poll::Ready(out.map_err(TxError::failed));
        }
        if Pin::new(&mut *timeout).poll(cx).is_ready() {
            abandoned.set(true);
            let why = if blocked.get() {
                "it is blocked: another tab or worker holds it open at an older version and does \
                 not close it"
            } else {
                "it did not open in time"
            };
            return Poll::Ready(Err(TxError::timed_out(unavailable(format!(
                "IndexedDB database {name:?} not opened within {io_timeout:?}: {why}"
            )))));
        }
        Poll::Pending
    })
    .await
}

fn create_stores(request: &IdbOpenDbRequest) -> Result<(), LockError> {
    let fail = |e: JsValue| unavailable(format!("IndexedDB upgrade failed: {}", describe(&e)));
    let db: IdbDatabase = request.result().map_err(fail)?.unchecked_into();
    let names = db.object_store_names();
    for (store, key) in STORES {
        if !names.contains(store) {
            let params = IdbObjectStoreParameters::new();
            params.set_key_path(&JsValue::from_str(key));
            db.create_object_store_with_optional_parameters(store, &params)
                .map_err(fail)?;
        }
    }
    Ok(())
}
