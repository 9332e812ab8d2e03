//! Wake-ups across contexts: one `BroadcastChannel` per database (named
//! `alkstore-idb:<database>`), and the local sleepers it wakes.
//!
//! Messages: `w:<id>` (waiter `id` should re-check: it was handed a lease or became first in
//! line), `n:<name>` (the lease on `name` was ended by force), `t:<token>` (the lease with
//! this fencing token was found lapsed by some context: its holder re-checks, whatever its
//! own clock says), and in test builds only `*` (every sleeper re-checks: a test moved the
//! clock; other builds ignore it, so a forged `*` wakes nobody). A channel does not deliver
//! to itself, so every post is also dispatched locally. Messages can be missed (a context
//! that is just starting, a browser without `BroadcastChannel`): every sleeper also wakes at
//! its own bounded deadline, so a lost message costs time, never a lease. A forged message
//! costs its sleepers one look at the database, never a lease: they act on what the
//! database says, not on the message.

use core::cell::{Cell, RefCell};
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use std::rc::Rc;

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{BroadcastChannel, MessageEvent};

use crate::tx::ops::Notice;

/// A sleeper's flag and waker.
#[derive(Default)]
struct Notify {
    woken: Cell<bool>,
    waker: Cell<Option<Waker>>,
}

impl Notify {
    fn wake(&self) {
        self.woken.set(true);
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }
}

struct Sleeper {
    key: u64,
    id: String,
    name: String,
    /// The fencing token of the lease it watches, if it watches one.
    token: Option<u64>,
    notify: Rc<Notify>,
}

#[derive(Default)]
struct Sleepers {
    next: u64,
    list: Vec<Sleeper>,
    /// How many messages ending a lease (`n:`, `t:`) this context saw: a handle that looks
    /// later than one of them (its watch did not run yet) looks at the database once.
    news: Cell<u64>,
}

impl Sleepers {
    fn dispatch(&self, message: &str) {
        if matches!(message.split_once(':'), Some(("n" | "t", _))) {
            self.news.set(self.news.get().wrapping_add(1));
        }
        for s in &self.list {
            let hit = match message.split_once(':') {
                Some(("w", id)) => s.id == id,
                Some(("n", name)) => s.name == name,
                Some(("t", token)) => s.token.is_some_and(|t| token.parse() == Ok(t)),
                _ => cfg!(feature = "test-clock") && message == "*",
            };
            if hit {
                s.notify.wake();
            }
        }
    }

    fn wake_all(&self) {
        for s in &self.list {
            s.notify.wake();
        }
    }

    /// Wakes the waiting `acquire`s (the sleepers that watch no lease).
    fn wake_waiters(&self) {
        for s in self.list.iter().filter(|s| s.token.is_none()) {
            s.notify.wake();
        }
    }
}

/// A channel that does not keep its store alive (held by the context's presence).
#[derive(Clone)]
pub(crate) struct WeakChannel(std::rc::Weak<Inner>);

impl WeakChannel {
    /// Whether its store still exists.
    pub(crate) fn is_alive(&self) -> bool {
        self.0.strong_count() > 0
    }

    /// Wakes its waiting `acquire`s (a context they wait behind died).
    pub(crate) fn wake_waiters(&self) {
        if let Some(inner) = self.0.upgrade() {
            inner.sleepers.borrow().wake_waiters();
        }
    }
}

struct Inner {
    channel: Option<BroadcastChannel>,
    sleepers: Rc<RefCell<Sleepers>>,
    /// Per name: when a waiter of this store last stepped (or set out to) on it, refreshing
    /// every ticket of this context there (engine µs).
    refreshed: RefCell<std::collections::HashMap<String, u64>>,
    _on_message: Option<Closure<dyn FnMut(MessageEvent)>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(channel) = &self.channel {
            channel.close();
        }
    }
}

/// The channel of one database, shared by the clones of a store.
#[derive(Clone)]
pub(crate) struct Channel(Rc<Inner>);

impl Channel {
    /// Joins the channel `name`; without `BroadcastChannel` (or if it refuses), wake-ups stay
    /// local and sleepers rely on their own deadlines.
    pub(crate) fn new(name: &str) -> Self {
        let sleepers: Rc<RefCell<Sleepers>> = Rc::default();
        let channel = BroadcastChannel::new(name).ok();
        let on_message = channel.as_ref().map(|channel| {
            let sleepers = Rc::clone(&sleepers);
            let f = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
                if let Some(message) = event.data().as_string() {
                    sleepers.borrow().dispatch(&message);
                }
            });
            channel.set_onmessage(Some(f.as_ref().unchecked_ref()));
            f
        });
        Channel(Rc::new(Inner {
            channel,
            sleepers,
            refreshed: RefCell::default(),
            _on_message: on_message,
        }))
    }

    /// A handle that does not keep the channel open.
    pub(crate) fn downgrade(&self) -> WeakChannel {
        WeakChannel(Rc::downgrade(&self.0))
    }

    fn send(&self, message: &str) {
        if let Some(channel) = &self.0.channel {
            let _ = channel.post_message(&JsValue::from_str(message));
        }
        self.0.sleepers.borrow().dispatch(message);
    }

    /// Announces a transaction's notice to every context (this one included).
    pub(crate) fn post(&self, notice: &Notice) {
        match notice {
            Notice::Waiter(id) => self.send(&format!("w:{id}")),
            Notice::Ended(name) => self.send(&format!("n:{name}")),
            Notice::Lapsed(token) => self.send(&format!("t:{token}")),
        }
    }

    /// Wakes every sleeper of this context (the connection was closed under it: the
    /// database may have been deleted, so every holder and waiter looks again).
    pub(crate) fn wake_local(&self) {
        self.0.sleepers.borrow().wake_all();
    }

    /// How many messages ending a lease (a force-release, a steal, a lapse found by another
    /// context) reached this context so far, its own included.
    pub(crate) fn news(&self) -> u64 {
        self.0.sleepers.borrow().news.get()
    }

    /// Wakes this context's waiters `ids` (news a sibling's step found for them).
    pub(crate) fn wake_ids(&self, ids: &[String]) {
        let sleepers = self.0.sleepers.borrow();
        for id in ids {
            sleepers.dispatch(&format!("w:{id}"));
        }
    }

    /// Notes that a waiter steps on `name` at `at` (µs): its siblings may skip a heartbeat.
    /// Entries older than a minute go once there are many names.
    pub(crate) fn note_refresh(&self, name: &str, at: u64) {
        let mut map = self.0.refreshed.borrow_mut();
        if map.len() >= 256 && !map.contains_key(name) {
            map.retain(|_, t| t.saturating_add(60_000_000) > at);
        }
        let entry = map.entry(name.to_owned()).or_insert(0);
        *entry = (*entry).max(at);
    }

    /// When a waiter of this store last stepped on `name` (µs; 0: never).
    pub(crate) fn refreshed(&self, name: &str) -> u64 {
        self.0.refreshed.borrow().get(name).copied().unwrap_or(0)
    }

    /// Wakes every sleeper of every context.
    #[cfg(feature = "test-clock")]
    pub(crate) fn post_all(&self) {
        self.send("*");
    }

    /// Registers a sleeper woken by messages naming `id`, the lock `name` or the lease with
    /// `token`, and (test builds) by `*`.
    pub(crate) fn register(&self, id: &str, name: &str, token: Option<u64>) -> Registration {
        let notify = Rc::new(Notify::default());
        let mut sleepers = self.0.sleepers.borrow_mut();
        sleepers.next += 1;
        let key = sleepers.next;
        sleepers.list.push(Sleeper {
            key,
            id: id.into(),
            name: name.into(),
            token,
            notify: Rc::clone(&notify),
        });
        Registration {
            sleepers: Rc::clone(&self.0.sleepers),
            key,
            notify,
        }
    }
}

/// A sleeper's registration; leaves the list when dropped.
pub(crate) struct Registration {
    sleepers: Rc<RefCell<Sleepers>>,
    key: u64,
    notify: Rc<Notify>,
}

impl Registration {
    /// Resolves at the next wake-up (at once if one came since the last call).
    pub(crate) fn notified(&self) -> Notified<'_> {
        Notified(self)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let key = self.key;
        self.sleepers.borrow_mut().list.retain(|s| s.key != key);
    }
}

/// The future of [`Registration::notified`].
pub(crate) struct Notified<'a>(&'a Registration);

impl Future for Notified<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let notify = &self.0.notify;
        if notify.woken.replace(false) {
            return Poll::Ready(());
        }
        notify.waker.set(Some(cx.waker().clone()));
        Poll::Pending
    }
}
