//! Liveness across contexts, from what the browser already knows: Web Locks.
//!
//! # The rules, in one place
//! - **Presence.** Every context (window, tab, dedicated worker) that opens a database holds
//!   an exclusive Web Lock named `alkstore:ctx:<database>:<id>` for as long as it lives, with
//!   a random `id` of its own. It is requested before `IdbLocks::open` returns and never
//!   released: the browser drops it when the context dies (closed, navigated away, crashed,
//!   terminated). One presence per database and context, shared by every store of that
//!   database the context opens, so a lease kept by a dropped store (or a detached handle)
//!   still belongs to a live context.
//! - **Records.** Every lease and ticket this context writes records the id (`ctx` in the
//!   row). The id is written only once its presence lock is held, so a record's id always
//!   names a presence lock that was held when the record was written: if that lock is gone
//!   later, its context is dead. A starting context never looks dead.
//! - **Dead is for ever.** Ids are never reused, so a context known dead stays dead: the set
//!   only grows, and every transaction of this context treats the leases of the contexts in
//!   it as over and their tickets as gone (see `tx/ops.rs`).
//! - **Finding out.** An id read from a row is checked against `navigator.locks.query()`
//!   issued after that read (a query issued before it could miss a context that was just
//!   starting): absent from `held` in exclusive mode, it is dead. Waiters do not poll: for
//!   each context that stands before them (the holder's, the waiters' ahead) one waiting
//!   request in **shared** mode on its presence lock is made per context and database; the
//!   browser grants it, with every other context's, the moment the exclusive holder dies;
//!   the callback marks the id dead, releases at once, and wakes this context's waiters to
//!   look again. Shared, so that a frozen or busy watcher (granted, its callback not run yet)
//!   delays no other watcher, and its hold never reads as the dead context's own. Such a
//!   request stays pending as long as the context it watches lives; there is one per foreign
//!   context, however many waiters. The watched name is the presence lock itself: its owner
//!   took it before writing its id anywhere and never asks for it again (ids are never
//!   reused), so a watcher can never stand in its way.
//! - **Without Web Locks** (an insecure origin, an old browser) or if the presence lock
//!   cannot be had, the id is empty: records carry no liveness, and the ttl and heartbeats
//!   rule them, as before.
//! - **A page unloading for good** (`pagehide` with `persisted` false: closed, navigated
//!   away without the back/forward cache) gives its presence lock up there and then, rather
//!   than when the browser tears it down tens of milliseconds later. It writes no id after,
//!   and each of its stores aborts its transactions in flight (`idb.rs`).
//! - **A stolen presence lock** (another script's `steal: true` on its name) makes this
//!   context look dead: its leases can be taken at once (fencing refuses its late writes).
//!   The context notices (the request's promise rejects) and writes no id from then on.

use core::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use js_sys::{Array, Function, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use super::channel::WeakChannel;
use crate::tx::ctx::Dead;

/// The name of a context's presence lock.
pub(crate) fn lock_name(db: &str, id: &str) -> String {
    format!("alkstore:ctx:{db}:{id}")
}

/// One context's liveness state for one database.
pub(crate) struct Presence {
    db: String,
    /// This context's id; empty when it holds no presence lock.
    id: String,
    /// The presence lock is held (it is requested at once; until granted, no id is written).
    held: Cell<bool>,
    /// The lock was taken from us (`steal`), or given up as the page unloads: write no id
    /// from then on.
    lost: Cell<bool>,
    /// Settles the promise the presence lock is held by: releases it.
    release: RefCell<Option<Function>>,
    /// `navigator.locks`, if this scope has it.
    locks: Option<JsValue>,
    /// Contexts known dead.
    dead: RefCell<Dead>,
    /// Contexts with a waiting request on their presence lock.
    watched: RefCell<std::collections::HashSet<String>>,
    /// The channels of this context's stores of the database: their waiters are woken when
    /// a context dies.
    channels: RefCell<Vec<WeakChannel>>,
}

thread_local! {
    /// The presence of this context, per database (held for the context's life).
    static PRESENCE: RefCell<HashMap<String, (Rc<Presence>, Promise)>> = RefCell::new(HashMap::new());
}

/// `navigator.locks` of this scope (window or worker), if any.
fn lock_manager() -> Option<JsValue> {
    let navigator = Reflect::get(&js_sys::global(), &JsValue::from_str("navigator")).ok()?;
    if navigator.is_undefined() || navigator.is_null() {
        return None;
    }
    let locks = Reflect::get(&navigator, &JsValue::from_str("locks")).ok()?;
    let request = Reflect::get(&locks, &JsValue::from_str("request")).ok()?;
    let query = Reflect::get(&locks, &JsValue::from_str("query")).ok()?;
    (request.is_function() && query.is_function()).then_some(locks)
}

/// Calls `locks.request(name, options, callback)`; the promise it returns, or `None` when it
/// threw.
fn request(locks: &JsValue, name: &str, options: &Object, callback: &JsValue) -> Option<Promise> {
    let request: Function = Reflect::get(locks, &JsValue::from_str("request"))
        .ok()?
        .dyn_into()
        .ok()?;
    let out = request
        .call3(locks, &JsValue::from_str(name), options, callback)
        .ok()?;
    out.dyn_into::<Promise>().ok()
}

/// `promise.catch(f)`, through `Reflect` (js-sys's `catch` wants a typed closure).
fn on_reject(promise: &Promise, f: &JsValue) {
    if let Some(catch) = Reflect::get(promise, &JsValue::from_str("catch"))
        .ok()
        .and_then(|c| c.dyn_into::<Function>().ok())
    {
        let _ = catch.call1(promise, f);
    }
}

/// The presence of this context for `db`: made (and its lock requested) on first use, then
/// shared. Resolves once the lock is held, or at once without Web Locks. `wait_ms` bounds
/// the wait for the grant (a fresh random name is granted at once; if it is not, the
/// context goes on without an id, the ttl ruling its records).
/// With `hold` false the context holds no presence lock (its records carry no id, the ttl
/// rules them) but still tells dead contexts from live ones.
pub(crate) async fn presence(db: &str, wait_ms: f64, hold: bool) -> Rc<Presence> {
    let key = format!("{}{db}", if hold { "+" } else { "-" });
    let existing = PRESENCE.with(|p| p.borrow().get(&key).cloned());
    let (presence, ready) = match existing {
        Some(found) => found,
        None => {
            let made = make(db, hold);
            PRESENCE.with(|p| p.borrow_mut().insert(key, made.clone()));
            made
        }
    };
    if hold && !presence.held.get() && presence.locks.is_some() {
        let timeout = Promise::new(&mut |resolve, _| {
            let _ = set_timeout(&resolve, wait_ms);
        });
        let _ = JsFuture::from(Promise::race(&Array::of2(&ready, &timeout))).await;
    }
    presence
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &Function, millis: f64) -> JsValue;
}

fn make(db: &str, hold: bool) -> (Rc<Presence>, Promise) {
    let locks = lock_manager();
    let id = if locks.is_some() && hold {
        super::new_id()
    } else {
        String::new()
    };
    let presence = Rc::new(Presence {
        db: db.into(),
        id,
        held: Cell::new(false),
        lost: Cell::new(false),
        locks,
        dead: RefCell::new(Dead::new()),
        watched: RefCell::new(Default::default()),
        channels: RefCell::new(Vec::new()),
        release: RefCell::new(None),
    });
    let mut resolve_ready: Option<Function> = None;
    let ready = Promise::new(&mut |resolve, _| resolve_ready = Some(resolve));
    let Some(locks) = presence.locks.as_ref().filter(|_| hold) else {
        return (presence, Promise::resolve(&JsValue::TRUE));
    };
    let weak = Rc::downgrade(&presence);
    let granted = {
        let weak = weak.clone();
        let resolve = resolve_ready.clone();
        Closure::once_into_js(move |_lock: JsValue| -> JsValue {
            if let Some(p) = weak.upgrade() {
                p.held.set(true);
            }
            if let Some(resolve) = &resolve {
                let _ = resolve.call0(&JsValue::UNDEFINED);
            }
            // Held until the context dies (or its page unloads for good): a promise only
            // `release` settles.
            let mut settle = None;
            let held = Promise::new(&mut |resolve, _| settle = Some(resolve));
            if let Some(p) = weak.upgrade() {
                *p.release.borrow_mut() = settle;
            }
            held.into()
        })
    };
    let options = Object::new();
    let _ = Reflect::set(&options, &"mode".into(), &"exclusive".into());
    let name = lock_name(db, &presence.id);
    match request(locks, &name, &options, &granted) {
        Some(promise) => {
            // Rejects only when the lock is taken from us (steal) or the request is refused.
            let on_lost = Closure::once_into_js(move |_e: JsValue| {
                if let Some(p) = weak.upgrade() {
                    p.lost.set(true);
                }
                if let Some(resolve) = &resolve_ready {
                    let _ = resolve.call0(&JsValue::UNDEFINED);
                }
            });
            on_reject(&promise, &on_lost);
        }
        None => {
            presence.lost.set(true);
            return (presence, Promise::resolve(&JsValue::TRUE));
        }
    }
    release_on_unload(&presence);
    (presence, ready)
}

/// In a window: gives the presence lock up in `pagehide` when the page is being discarded
/// (`persisted` false: closed, navigated away without the back/forward cache). The browser
/// would drop it anyway once the page is torn down, tens of milliseconds later; given up
/// here, the contexts waiting behind this one take over that much sooner. A page entering
/// the back/forward cache (`persisted` true) keeps it: it may come back.
fn release_on_unload(presence: &Rc<Presence>) {
    let global = js_sys::global();
    let Ok(add) = Reflect::get(&global, &JsValue::from_str("addEventListener")) else {
        return;
    };
    let Ok(add) = add.dyn_into::<Function>() else {
        return;
    };
    let has_pagehide = Reflect::has(&global, &JsValue::from_str("onpagehide")).unwrap_or(false);
    if !has_pagehide {
        return; // a worker: terminated at once anyway
    }
    let weak = Rc::downgrade(presence);
    let listener = Closure::<dyn FnMut(JsValue)>::new(move |event: JsValue| {
        let persisted = Reflect::get(&event, &JsValue::from_str("persisted"))
            .ok()
            .and_then(|p| p.as_bool())
            .unwrap_or(false);
        if persisted {
            return;
        }
        if let Some(p) = weak.upgrade() {
            p.lost.set(true);
            if let Some(release) = p.release.borrow_mut().take() {
                let _ = release.call0(&JsValue::UNDEFINED);
            }
        }
    });
    let _ = add.call2(&global, &JsValue::from_str("pagehide"), listener.as_ref());
    // Lives as long as the page: one listener per database the page opens.
    listener.forget();
}

impl Presence {
    /// The id to write into leases and tickets: empty unless the presence lock is held.
    pub(crate) fn me(&self) -> &str {
        if self.held.get() && !self.lost.get() {
            &self.id
        } else {
            ""
        }
    }

    /// The contexts known dead.
    pub(crate) fn dead(&self) -> std::cell::Ref<'_, Dead> {
        self.dead.borrow()
    }

    /// Wakes the waiters of `channel` when a context dies.
    pub(crate) fn subscribe(&self, channel: WeakChannel) {
        let mut channels = self.channels.borrow_mut();
        channels.retain(WeakChannel::is_alive);
        channels.push(channel);
    }

    fn unknown<'a>(&self, ids: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let dead = self.dead.borrow();
        let mut out: Vec<String> = Vec::new();
        for id in ids {
            if !id.is_empty() && id != self.id && !dead.contains(id) && !out.iter().any(|o| o == id)
            {
                out.push(id.into());
            }
        }
        out
    }

    /// Checks the contexts `ids` (read from rows before this call) with one
    /// `navigator.locks.query()`; `true` when one of them turned out dead (it is then known
    /// dead for good). `false` without Web Locks, or when the query fails.
    pub(crate) async fn confirm<'a>(&self, ids: impl IntoIterator<Item = &'a str>) -> bool {
        let ids = self.unknown(ids);
        let Some(locks) = &self.locks else {
            return false;
        };
        if ids.is_empty() {
            return false;
        }
        let Some(query) = Reflect::get(locks, &JsValue::from_str("query"))
            .ok()
            .and_then(|q| q.dyn_into::<Function>().ok())
        else {
            return false;
        };
        let Ok(promise) = query.call0(locks).and_then(|p| p.dyn_into::<Promise>()) else {
            return false;
        };
        let Ok(snapshot) = JsFuture::from(promise).await else {
            return false;
        };
        let Ok(held) = Reflect::get(&snapshot, &JsValue::from_str("held")) else {
            return false;
        };
        let Ok(held) = held.dyn_into::<Array>() else {
            return false;
        };
        // Only an exclusive hold is the context's own: the watchers of other contexts hold
        // the name shared, for an instant, once it is gone.
        let names: std::collections::HashSet<String> = held
            .iter()
            .filter(|info| {
                Reflect::get(info, &JsValue::from_str("mode"))
                    .ok()
                    .and_then(|m| m.as_string())
                    .is_none_or(|m| m == "exclusive")
            })
            .filter_map(|info| {
                Reflect::get(&info, &JsValue::from_str("name"))
                    .ok()?
                    .as_string()
            })
            .collect();
        let mut found = false;
        for id in ids {
            if !names.contains(&lock_name(&self.db, &id)) {
                self.dead.borrow_mut().insert(id);
                found = true;
            }
        }
        found
    }

    /// Watches the contexts `ids` (read from rows before this call): when one dies, it is
    /// marked dead and this context's waiters are woken. One waiting request per context.
    pub(crate) fn watch<'a>(self: &Rc<Self>, ids: impl IntoIterator<Item = &'a str>) {
        let Some(locks) = &self.locks else {
            return;
        };
        for id in self.unknown(ids) {
            if !self.watched.borrow_mut().insert(id.clone()) {
                continue;
            }
            let weak: Weak<Self> = Rc::downgrade(self);
            let dead_id = id.clone();
            // Granted the moment the watched context's presence lock is dropped; returning
            // releases it at once.
            let granted = Closure::once_into_js(move |_lock: JsValue| {
                if let Some(p) = weak.upgrade() {
                    p.watched.borrow_mut().remove(&dead_id);
                    p.dead.borrow_mut().insert(dead_id);
                    p.wake();
                }
            });
            // Shared: every watcher of every context is granted together the moment the
            // exclusive holder dies, so a frozen or busy one (whose callback cannot run yet)
            // delays nobody else, and never shows as the context's own hold.
            let options = Object::new();
            let _ = Reflect::set(&options, &"mode".into(), &"shared".into());
            match request(locks, &lock_name(&self.db, &id), &options, &granted) {
                Some(promise) => {
                    let ignore = Closure::once_into_js(|_e: JsValue| {});
                    on_reject(&promise, &ignore);
                }
                None => {
                    self.watched.borrow_mut().remove(&id);
                }
            }
        }
    }

    /// Wakes the waiters of every store of this database in this context.
    fn wake(&self) {
        let channels: Vec<WeakChannel> = self.channels.borrow().clone();
        for channel in channels {
            channel.wake_waiters();
        }
    }
}
