//! The JavaScript classes: `Locks`, `Lock`, `Pending` (a driven future that can be dropped at
//! any moment), `Watch` (a keep_alive or lapsed that can be stopped), `Fence`.

use core::cell::{Cell, RefCell};
use core::future::{Future, poll_fn};
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::rc::Rc;

use alkstore_idb::{IdbConfig, IdbLock, IdbLocks, LeaseInfo, LockError};
use alkstore_mem::{LockOptions, with_lock};
use js_sys::{Array, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{JsFuture, future_to_promise};

type Local<T> = Pin<Box<dyn Future<Output = T>>>;
/// A driven future's slot: `None` once finished or cancelled.
type Slot = Rc<RefCell<Option<Local<Result<JsValue, JsValue>>>>>;

fn err(e: LockError) -> JsValue {
    let obj = Object::new();
    let kind = match &e {
        LockError::Unavailable { .. } => "Unavailable",
        LockError::Expired { .. } => "Expired",
        LockError::InvalidTtl { .. } => "InvalidTtl",
        LockError::InvalidName { .. } => "InvalidName",
        LockError::InvalidOwner { .. } => "InvalidOwner",
        _ => "Other",
    };
    set(&obj, "kind", kind.into());
    set(&obj, "message", e.to_string().into());
    obj.into()
}

fn ms(millis: f64) -> Duration {
    Duration::from_secs_f64(millis.max(0.0) / 1000.0)
}

fn set(obj: &Object, key: &str, value: JsValue) {
    let _ = Reflect::set(obj, &JsValue::from_str(key), &value);
}

fn info_js(lease: &LeaseInfo) -> JsValue {
    let obj = Object::new();
    set(&obj, "name", lease.name().into());
    set(&obj, "owner", lease.owner().into());
    set(&obj, "token", (lease.token() as f64).into());
    // µs: exact in an f64 (the engine keeps µs).
    set(
        &obj,
        "deadlineUs",
        ((lease.deadline().as_nanos() / 1000) as f64).into(),
    );
    set(
        &obj,
        "deadlineNsRem",
        ((lease.deadline().as_nanos() % 1000) as f64).into(),
    );
    obj.into()
}

/// A `setTimeout` promise, as a future.
async fn sleep_ms(millis: f64) {
    let promise = Promise::new(&mut |resolve, _| {
        let global = js_sys::global();
        let set_timeout: js_sys::Function = Reflect::get(&global, &"setTimeout".into())
            .unwrap()
            .unchecked_into();
        let _ = set_timeout.call2(&JsValue::NULL, &resolve, &millis.into());
    });
    let _ = JsFuture::from(promise).await;
}

/// Locks shared by every page and worker that open the same database name.
#[wasm_bindgen]
#[derive(Debug, Clone)]
pub struct Locks(IdbLocks);

#[wasm_bindgen]
impl Locks {
    /// Opens `db` with this io timeout and waiter heartbeat (ms).
    pub async fn open(db: String, io_timeout_ms: f64, heartbeat_ms: f64) -> Result<Locks, JsValue> {
        let config = IdbConfig::new()
            .with_io_timeout(ms(io_timeout_ms))
            .with_waiter_heartbeat(ms(heartbeat_ms));
        IdbLocks::open_with(&db, config)
            .await
            .map(Locks)
            .map_err(err)
    }

    /// `try_lock`: a `Lock` or `null`.
    #[wasm_bindgen(js_name = tryLock)]
    pub fn try_lock(&self, name: String, owner: String, ttl_ms: f64) -> Promise {
        let fut = self.0.try_lock(&name, &owner, ms(ttl_ms));
        future_to_promise(async move {
            Ok(fut
                .await
                .map_err(err)?
                .map_or(JsValue::NULL, |l| Lock::from(l).into()))
        })
    }

    /// `try_lock`, its future dropped `polls` polls in (0: never polled).
    #[wasm_bindgen(js_name = tryLockDropped)]
    pub fn try_lock_dropped(&self, name: String, owner: String, ttl_ms: f64, polls: u32) -> bool {
        let mut fut = self.0.try_lock(&name, &owner, ms(ttl_ms));
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..polls {
            if Pin::new(&mut fut).poll(&mut cx).is_ready() {
                return true;
            }
        }
        false
    }

    /// `acquire` (bounded by `wait_ms` when given), driven in the background: a `Pending`
    /// whose `done` gives a `Lock` or `null`, and whose `cancel()` drops the future wherever
    /// it is. Polled once before this returns (its first step is sent).
    pub fn acquire(
        &self,
        name: String,
        owner: String,
        ttl_ms: f64,
        wait_ms: Option<f64>,
    ) -> Pending {
        let mut fut = self.0.acquire(&name, &owner, ms(ttl_ms));
        if let Some(wait) = wait_ms {
            fut = fut.timeout(ms(wait));
        }
        Pending::drive(Box::pin(async move {
            Ok(fut
                .await
                .map_err(err)?
                .map_or(JsValue::NULL, |l| Lock::from(l).into()))
        }))
    }

    /// `try_lock` driven as a `Pending` (so that it can be cancelled).
    #[wasm_bindgen(js_name = tryLockPending)]
    pub fn try_lock_pending(&self, name: String, owner: String, ttl_ms: f64) -> Pending {
        let fut = self.0.try_lock(&name, &owner, ms(ttl_ms));
        Pending::drive(Box::pin(async move {
            Ok(fut
                .await
                .map_err(err)?
                .map_or(JsValue::NULL, |l| Lock::from(l).into()))
        }))
    }

    /// The live lease on `name` (`{ name, owner, token, deadlineUs }`) or `null`.
    pub fn holder(&self, name: String) -> Promise {
        let fut = self.0.holder(&name);
        future_to_promise(async move {
            Ok(fut
                .await
                .map_err(err)?
                .map_or(JsValue::NULL, |l| info_js(&l)))
        })
    }

    /// `snapshot`: `{ held: [info], waiting: [{ name, owner }] }`.
    pub fn snapshot(&self) -> Promise {
        let fut = self.0.snapshot();
        future_to_promise(async move {
            let snapshot = fut.await.map_err(err)?;
            let held = Array::new();
            for lease in &snapshot.held {
                held.push(&info_js(lease));
            }
            let waiting = Array::new();
            for w in &snapshot.waiting {
                let obj = Object::new();
                set(&obj, "name", w.name.as_str().into());
                set(&obj, "owner", w.owner.as_str().into());
                waiting.push(&obj);
            }
            let obj = Object::new();
            set(&obj, "held", held.into());
            set(&obj, "waiting", waiting.into());
            Ok(obj.into())
        })
    }

    /// `force_release`: the ended lease's info, or `null`.
    #[wasm_bindgen(js_name = forceRelease)]
    pub fn force_release(&self, name: String) -> Promise {
        let fut = self.0.force_release(&name);
        future_to_promise(async move {
            Ok(fut
                .await
                .map_err(err)?
                .map_or(JsValue::NULL, |l| info_js(&l)))
        })
    }

    /// The core's `with_lock` (keep_alive when `keep_alive_ms` is given, wait when `wait_ms`
    /// is): the body records the lease it got and sleeps `hold_ms`. Resolves to
    /// `{ ok: info|null }` or `{ error }`, with `bodyEnded` (whether the body ran to its end).
    #[wasm_bindgen(js_name = withLock)]
    pub fn with_lock(
        &self,
        name: String,
        owner: String,
        ttl_ms: f64,
        keep_alive_ms: Option<f64>,
        wait_ms: Option<f64>,
        hold_ms: f64,
    ) -> Promise {
        let store = self.0.clone();
        future_to_promise(async move {
            let mut options = LockOptions::ttl(ms(ttl_ms));
            if let Some(k) = keep_alive_ms {
                options = options.keep_alive(ms(k));
            }
            if let Some(w) = wait_ms {
                options = options.wait(ms(w));
            }
            let ended = Rc::new(Cell::new(false));
            let e2 = Rc::clone(&ended);
            let out = with_lock(&store, &name, &owner, options, |info| async move {
                sleep_ms(hold_ms).await;
                e2.set(true);
                info
            })
            .await;
            let obj = Object::new();
            match out {
                Ok(info) => set(&obj, "ok", info.map_or(JsValue::NULL, |i| info_js(&i))),
                Err(e) => set(&obj, "error", err(e)),
            }
            set(&obj, "bodyEnded", ended.get().into());
            Ok(obj.into())
        })
    }
}

/// A future driven in the background, which `cancel()` drops wherever it is.
#[wasm_bindgen]
pub struct Pending {
    fut: Slot,
    waker: Rc<Cell<Option<Waker>>>,
    done: Promise,
}

impl core::fmt::Debug for Pending {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Pending").finish_non_exhaustive()
    }
}

impl Pending {
    fn drive(fut: Local<Result<JsValue, JsValue>>) -> Pending {
        let fut = Rc::new(RefCell::new(Some(fut)));
        let waker: Rc<Cell<Option<Waker>>> = Rc::default();
        // The first poll now (sends the first transaction).
        let first = {
            let mut slot = fut.borrow_mut();
            let mut cx = Context::from_waker(Waker::noop());
            match slot.as_mut().map(|f| f.as_mut().poll(&mut cx)) {
                Some(Poll::Ready(out)) => {
                    *slot = None;
                    Some(out)
                }
                _ => None,
            }
        };
        let (f2, w2) = (Rc::clone(&fut), Rc::clone(&waker));
        let done = future_to_promise(async move {
            if let Some(out) = first {
                return out;
            }
            poll_fn(move |cx| {
                w2.set(Some(cx.waker().clone()));
                let mut slot = f2.borrow_mut();
                match slot.as_mut() {
                    None => Poll::Ready(Err(JsValue::from_str("cancelled"))),
                    Some(f) => {
                        let out = f.as_mut().poll(cx);
                        if out.is_ready() {
                            *slot = None;
                        }
                        out
                    }
                }
            })
            .await
        });
        Pending { fut, waker, done }
    }
}

#[wasm_bindgen]
impl Pending {
    /// Resolves with the future's output (rejects with "cancelled" once cancelled).
    #[wasm_bindgen(getter)]
    pub fn done(&self) -> Promise {
        self.done.clone()
    }

    /// Drops the future now, wherever it is; `true` if it was still running.
    pub fn cancel(&self) -> bool {
        let fut = self.fut.borrow_mut().take();
        let was = fut.is_some();
        drop(fut);
        if let Some(w) = self.waker.take() {
            w.wake();
        }
        was
    }
}

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
}

impl From<IdbLock> for Lock {
    fn from(lock: IdbLock) -> Self {
        Lock {
            token: lock.token(),
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

    /// `info()` as `{ name, owner, token, deadlineUs }`, plus `ttlMs`.
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

/// The store side of fencing: refuses a token lower than the highest it saw.
#[wasm_bindgen]
#[derive(Debug, Default)]
pub struct Fence(alkstore_mem::Fence);

#[wasm_bindgen]
impl Fence {
    /// A fence that has seen no token.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Fence {
        Fence::default()
    }

    /// `null` when a write with `token` may go ahead, else why it is refused.
    pub fn check(&self, token: f64) -> JsValue {
        match self.0.check(token as u64) {
            Ok(()) => JsValue::NULL,
            Err(stale) => JsValue::from_str(&stale.to_string()),
        }
    }
}
