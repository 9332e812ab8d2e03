//! Opening the database: the global scope's `indexedDB`, the schema upgrade, a connection
//! blocked by another one, and a bound on the whole.

use core::cell::{Cell, RefCell};
use core::pin::Pin;
use core::task::Poll;
use core::time::Duration;
use std::rc::Rc;

use alkstore_mem::LockError;
use alkstore_mem_web::TimeoutSleep;
use js_sys::Reflect;
use wasm_bindgen::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Event, IdbDatabase, IdbFactory, IdbObjectStoreParameters, IdbOpenDbRequest};

use super::idb::{Handler, LOCKS, META, Slot, describe};
use crate::unavailable;

/// The schema version: object stores `locks` (key path `name`) and `meta` (key path `key`,
/// one row: `clock`).
const SCHEMA_VERSION: u32 = 1;

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

/// Opens `name` at [`SCHEMA_VERSION`], creating the stores on first use.
pub(crate) async fn open_db(name: &str, io_timeout: Duration) -> Result<IdbDatabase, LockError> {
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
