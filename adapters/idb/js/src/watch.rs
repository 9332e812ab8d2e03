//! A lease's watches: `keepAlive()` and `lapsed()` as futures on a clone of the handle's
//! `Rc`, each in a slot of its own that a renewal pauses (dropping the future, and with it
//! the clone) and starts again on the renewed handle, and that release stops. The promise
//! a watch hands out polls whatever its slot holds, so it stays the same across renewals.

use core::cell::{Cell, RefCell};
use core::future::{Future, poll_fn};
use core::pin::Pin;
use core::task::{Poll, Waker};
use core::time::Duration;
use std::rc::Rc;

use alkstore_idb::{IdbLock, LockError};
use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::error::err;

type Local<T> = Pin<Box<dyn Future<Output = T>>>;

/// What a watch runs.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    /// `keep_alive(every)`.
    KeepAlive(Duration),
    /// `lapsed()`.
    Lapsed,
}

/// A watch's future, paused while a renewal runs, stopped by release.
enum State {
    Running(Local<LockError>),
    Paused,
    Stopped,
}

/// One watch: what it runs and the slot its future sits in.
pub(crate) struct Watch {
    kind: Kind,
    state: RefCell<State>,
    waker: Cell<Option<Waker>>,
}

impl Watch {
    /// A watch of `kind`, running on `lock`.
    pub(crate) fn start(lock: Rc<IdbLock>, kind: Kind) -> Rc<Watch> {
        Rc::new(Watch {
            kind,
            state: RefCell::new(State::Running(watch_future(lock, kind))),
            waker: Cell::new(None),
        })
    }

    /// Replaces the state, dropping the old future outside the borrow, and wakes the driver.
    fn set(&self, state: State) {
        let old = self.state.replace(state);
        drop(old);
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    /// Stops the watch (its promise resolves with `null`), dropping its future.
    pub(crate) fn stop(&self) {
        self.set(State::Stopped);
    }

    /// Pauses the watch if it runs, dropping its future (and its clone of the handle).
    pub(crate) fn pause(&self) {
        if matches!(*self.state.borrow(), State::Running(_)) {
            self.set(State::Paused);
        }
    }

    /// Starts a paused watch again, on `lock`.
    pub(crate) fn resume(&self, lock: &Rc<IdbLock>) {
        if matches!(*self.state.borrow(), State::Paused) {
            self.set(State::Running(watch_future(Rc::clone(lock), self.kind)));
        }
    }

    /// Whether this is a running `keepAlive`.
    pub(crate) fn is_keeping_alive(&self) -> bool {
        matches!(self.kind, Kind::KeepAlive(_)) && matches!(*self.state.borrow(), State::Running(_))
    }

    /// Whether the watch stopped (ended, or was stopped).
    pub(crate) fn is_stopped(&self) -> bool {
        matches!(*self.state.borrow(), State::Stopped)
    }

    /// The watch's promise: resolves with the error the lease was lost with, or `null`
    /// once stopped; a pause keeps it pending.
    pub(crate) fn promise(self: Rc<Self>) -> Promise {
        let watch = self;
        future_to_promise(async move {
            let out = poll_fn(|cx| {
                watch.waker.set(Some(cx.waker().clone()));
                let mut state = watch.state.borrow_mut();
                let State::Running(fut) = &mut *state else {
                    return match *state {
                        State::Stopped => Poll::Ready(None),
                        _ => Poll::Pending,
                    };
                };
                match fut.as_mut().poll(cx) {
                    Poll::Ready(why) => {
                        let old = core::mem::replace(&mut *state, State::Stopped);
                        drop(state);
                        drop(old);
                        Poll::Ready(Some(why))
                    }
                    Poll::Pending => Poll::Pending,
                }
            })
            .await;
            Ok(out.map_or(JsValue::NULL, err))
        })
    }
}

/// The future a watch of `kind` runs on `lock`.
fn watch_future(lock: Rc<IdbLock>, kind: Kind) -> Local<LockError> {
    match kind {
        Kind::KeepAlive(every) => Box::pin(async move { lock.keep_alive(every).await }),
        Kind::Lapsed => Box::pin(async move { lock.lapsed().await }),
    }
}
