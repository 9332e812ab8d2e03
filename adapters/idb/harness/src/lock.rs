//! `Lock`: a held lease for JavaScript, and `Watch`: its keep_alive or lapsed running in
//! the background until it resolves or is stopped.

use core::cell::{Cell, RefCell};
use core::future::{Future, poll_fn};
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::rc::Rc;

use alkstore_idb::{IdbLock, LockError};
use js_sys::{Object, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::js::{err, info_js, ms, set};

type Local<T> = Pin<Box<dyn Future<Output = T>>>;

/// A stop flag for a `Watch`.
#[derive(Default)]
struct Stop {
    stopped: Cell<bool>,
    waker: Cell<Option<Waker>>,
}

/// A running keep_alive or lapsed: `done` resolves with the error it ended with (as
/// `{ kind, message }`), or `"stopped"`.
#[wasm_bindgen]
pub struct Watch {
    stop: Rc<Stop>,
    done: Promise,
}

impl core::fmt::Debug for Watch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Watch").finish_non_exhaustive()
    }
}

#[wasm_bindgen]
impl Watch {
    /// The outcome.
    #[wasm_bindgen(getter)]
    pub fn done(&self) -> Promise {
        self.done.clone()
    }

    /// Drops the keep_alive or lapsed future.
    pub fn stop(&self) {
        self.stop.stopped.set(true);
        if let Some(w) = self.stop.waker.take() {
            w.wake();
        }
    }
}

fn watch(lock: Rc<IdbLock>, keep_alive: Option<Duration>) -> Watch {
    let stop: Rc<Stop> = Rc::default();
    let s2 = Rc::clone(&stop);
    let done = future_to_promise(async move {
        let mut fut: Local<LockError> = match keep_alive {
            Some(every) => {
                let l = Rc::clone(&lock);
                Box::pin(async move { l.keep_alive(every).await })
            }
            None => {
                let l = Rc::clone(&lock);
                Box::pin(async move { l.lapsed().await })
            }
        };
        let out = poll_fn(|cx| {
            if s2.stopped.get() {
                return Poll::Ready(None);
            }
            s2.waker.set(Some(cx.waker().clone()));
            fut.as_mut().poll(cx).map(Some)
        })
        .await;
        drop(fut);
        drop(lock);
        Ok(match out {
            Some(e) => err(e),
            None => JsValue::from_str("stopped"),
        })
    });
    Watch { stop, done }
}

/// A held lease.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Lock {
    lock: Rc<RefCell<Option<Rc<IdbLock>>>>,
    token: u64,
    deadline_ms: f64,
}

impl From<IdbLock> for Lock {
    fn from(lock: IdbLock) -> Self {
        Lock {
            token: lock.token(),
            deadline_ms: lock.deadline().as_nanos() as f64 / 1e6,
            lock: Rc::new(RefCell::new(Some(Rc::new(lock)))),
        }
    }
}

impl Lock {
    fn get(&self) -> Result<Rc<IdbLock>, JsValue> {
        self.lock
            .borrow()
            .clone()
            .ok_or_else(|| JsValue::from_str("released already"))
    }
}

#[wasm_bindgen]
impl Lock {
    /// The fencing token.
    #[wasm_bindgen(getter)]
    pub fn token(&self) -> f64 {
        self.token as f64
    }

    /// The deadline of the grant, in ms since the epoch.
    #[wasm_bindgen(getter)]
    pub fn deadline(&self) -> f64 {
        self.deadline_ms
    }

    /// `info()` as `{ name, owner, token, deadline, deadlineUs }`, plus `ttlMs`.
    pub fn info(&self) -> Result<JsValue, JsValue> {
        let lock = self.get()?;
        let obj: Object = info_js(&lock.info()).unchecked_into();
        set(&obj, "ttlMs", (lock.ttl().as_secs_f64() * 1000.0).into());
        Ok(obj.into())
    }

    /// `release`: whether the lease was still live. Fails while a Watch runs.
    pub fn release(&self) -> Promise {
        let lock = self.lock.borrow_mut().take();
        future_to_promise(async move {
            let lock = lock.ok_or_else(|| JsValue::from_str("released already"))?;
            let lock = Rc::try_unwrap(lock)
                .map_err(|_| JsValue::from_str("a keepAlive or lapsed still runs"))?;
            Ok(lock.release().await.map_err(err)?.into())
        })
    }

    /// Drops the handle (its Drop releases).
    #[wasm_bindgen(js_name = dropHandle)]
    pub fn drop_handle(&self) {
        drop(self.lock.borrow_mut().take());
    }

    /// `is_held`.
    #[wasm_bindgen(js_name = isHeld)]
    pub fn is_held(&self) -> Promise {
        let lock = self.get();
        future_to_promise(async move { Ok(lock?.is_held().await.map_err(err)?.into()) })
    }

    /// `renew(ttl)`. Fails while a Watch runs.
    pub fn renew(&self, ttl_ms: f64) -> Promise {
        let lock = self.lock.borrow_mut().take();
        let slot = Rc::clone(&self.lock);
        future_to_promise(async move {
            let mut lock = lock.ok_or_else(|| JsValue::from_str("released already"))?;
            let out = match Rc::get_mut(&mut lock) {
                Some(l) => l.renew(ms(ttl_ms)).await.map_err(err),
                None => Err(JsValue::from_str("a keepAlive or lapsed still runs")),
            };
            *slot.borrow_mut() = Some(lock);
            out.map(|()| JsValue::TRUE)
        })
    }

    /// `renew(ttl)`, its future polled once (the transaction sent) and dropped.
    #[wasm_bindgen(js_name = renewDropped)]
    pub fn renew_dropped(&self, ttl_ms: f64) -> Result<bool, JsValue> {
        let mut slot = self.lock.borrow_mut();
        let lock = slot
            .as_mut()
            .and_then(Rc::get_mut)
            .ok_or_else(|| JsValue::from_str("released, or a Watch runs"))?;
        let mut fut = lock.renew(ms(ttl_ms));
        Ok(Pin::new(&mut fut)
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_pending())
    }

    /// `keep_alive(every)` running in the background.
    #[wasm_bindgen(js_name = keepAlive)]
    pub fn keep_alive(&self, every_ms: f64) -> Result<Watch, JsValue> {
        Ok(watch(self.get()?, Some(ms(every_ms))))
    }

    /// `lapsed()` running in the background.
    pub fn lapsed(&self) -> Result<Watch, JsValue> {
        Ok(watch(self.get()?, None))
    }

    /// `detach`.
    pub fn detach(&self) {
        if let Some(lock) = self.lock.borrow_mut().take() {
            if let Ok(lock) = Rc::try_unwrap(lock) {
                lock.detach();
            }
        }
    }
}
