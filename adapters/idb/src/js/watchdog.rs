//! The io timeout of transactions: one `setTimeout` per database for all of them, armed at
//! the earliest deadline of the transactions in flight, instead of one timer per transaction
//! (a timer costs about as much as the rest of the JavaScript a transaction runs). Deadlines
//! are on the monotonic clock (`performance.now()`), so that a system clock step while a
//! transaction waits neither ends it early nor lets it run past its `io_timeout`.

use core::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::{Rc, Weak};

use alkstore_mem::Clock;
use alkstore_mem_web::PerformanceClock;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    // The global scope's timers: present in windows and workers alike.
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &js_sys::Function, millis: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue);
}

/// A transaction the watchdog looks after.
pub(crate) trait Watched {
    /// Whether it has finished (committed or aborted).
    fn finished(&self) -> bool;
    /// Its time is up: abort it if it has not committed, and answer `Unavailable`.
    fn expire(&self);
    /// The page is unloading for good: abort it if it has not committed (so that it stops
    /// holding the database for every other context), and answer `Unavailable`.
    fn abandon(&self);
}

/// The transactions in flight, by deadline (ms on the monotonic clock), and the one timer.
pub(crate) struct Watchdog {
    clock: PerformanceClock,
    /// In the order they were started; with one io timeout per database that is deadline order.
    watched: RefCell<VecDeque<(f64, Weak<dyn Watched>)>>,
    armed: Cell<Option<JsValue>>,
    fire: RefCell<Option<Closure<dyn FnMut()>>>,
}

impl Watchdog {
    pub(crate) fn new() -> Rc<Self> {
        let this = Rc::new(Watchdog {
            clock: PerformanceClock::new(),
            watched: RefCell::new(VecDeque::new()),
            armed: Cell::new(None),
            fire: RefCell::new(None),
        });
        let weak = Rc::downgrade(&this);
        *this.fire.borrow_mut() = Some(Closure::new(move || {
            if let Some(this) = weak.upgrade() {
                this.fired();
            }
        }));
        this
    }

    /// `performance.now()` in ms (`Date.now()` where the scope has no `performance`).
    fn now_ms(&self) -> f64 {
        self.clock.now().as_nanos() as f64 / 1e6
    }

    /// Watches a transaction for `io_ms` from now.
    pub(crate) fn watch(&self, io_ms: f64, tx: Weak<dyn Watched>) {
        let deadline = self.now_ms() + io_ms;
        let mut watched = self.watched.borrow_mut();
        // Keep the list short: finished transactions at the front go.
        while watched
            .front()
            .is_some_and(|(_, w)| w.upgrade().is_none_or(|w| w.finished()))
        {
            watched.pop_front();
        }
        watched.push_back((deadline, tx));
        let first = watched.front().map(|(d, _)| *d);
        drop(watched);
        if let Some(first) = first {
            self.arm(first);
        }
    }

    /// Aborts every transaction in flight (the page is unloading for good).
    pub(crate) fn abandon_all(&self) {
        let live: Vec<Rc<dyn Watched>> = self
            .watched
            .borrow()
            .iter()
            .filter_map(|(_, w)| w.upgrade())
            .filter(|tx| !tx.finished())
            .collect();
        // Outside the borrow: aborting runs user-visible wake-ups.
        for tx in live {
            tx.abandon();
        }
    }

    fn arm(&self, at: f64) {
        let armed = self.armed.take();
        if armed.is_some() {
            // Armed already, for a deadline no later than this one.
            self.armed.set(armed);
            return;
        }
        if let Some(fire) = self.fire.borrow().as_ref() {
            let wait = (at - self.now_ms()).max(0.0) + 1.0;
            self.armed
                .set(Some(set_timeout(fire.as_ref().unchecked_ref(), wait)));
        }
    }

    fn fired(&self) {
        self.armed.set(None);
        let now = self.now_ms();
        let mut due = Vec::new();
        {
            let mut watched = self.watched.borrow_mut();
            while let Some((deadline, w)) = watched.front() {
                match w.upgrade() {
                    Some(tx) if tx.finished() => {}
                    Some(tx) if *deadline <= now => due.push(tx),
                    Some(_) => break,
                    None => {}
                }
                watched.pop_front();
            }
        }
        // Outside the borrow: expiring runs user-visible wake-ups.
        for tx in due {
            tx.expire();
        }
        let next = self.watched.borrow().front().map(|(d, _)| *d);
        if let Some(next) = next {
            self.arm(next);
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(id) = self.armed.take() {
            clear_timeout(&id);
        }
    }
}
