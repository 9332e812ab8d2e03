//! [`RawLocks`]: an `IdbLocks` for JavaScript, and [`RawPending`]: a waiting `acquire`
//! driven in the background until it resolves or is cancelled.

use core::cell::{Cell, RefCell};
use core::future::{Future, poll_fn};
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::rc::Rc;

use alkstore_idb::{IdbConfig, IdbLock, IdbLocks};
use js_sys::{Array, Object, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::error::{err, info_js, ms, set};
use crate::lease::RawLease;

type Local<T> = Pin<Box<dyn Future<Output = T>>>;

/// Locks shared by every page and worker of the origin that opens the same database name:
/// an [`IdbLocks`]. Durations are in milliseconds.
#[wasm_bindgen]
#[derive(Debug, Clone)]
pub struct RawLocks(IdbLocks);

/// A granted lock as a `RawLease`, or `null`.
fn lease_or_null(lock: Option<IdbLock>, io_timeout: Duration) -> Result<JsValue, JsValue> {
    match lock {
        Some(lock) => Ok(RawLease::new(lock, io_timeout)?.into()),
        None => Ok(JsValue::NULL),
    }
}

#[wasm_bindgen]
impl RawLocks {
    /// Opens (creating on first use) the IndexedDB database `db` with this `io_timeout`,
    /// waiter heartbeat (ms) and longest name (bytes of UTF-8).
    ///
    /// # Errors
    /// An `UnavailableError` when IndexedDB is absent, forbidden or blocked.
    pub async fn open(
        db: String,
        io_timeout_ms: f64,
        heartbeat_ms: f64,
        max_name_len: u32,
    ) -> Result<RawLocks, JsValue> {
        let config = IdbConfig::new()
            .with_io_timeout(ms(io_timeout_ms))
            .with_waiter_heartbeat(ms(heartbeat_ms))
            .with_max_name_len(max_name_len as usize);
        IdbLocks::open_with(&db, config)
            .await
            .map(RawLocks)
            .map_err(err)
    }

    /// The database's name.
    #[wasm_bindgen(getter, js_name = databaseName)]
    pub fn database_name(&self) -> String {
        self.0.database_name().into()
    }

    /// The io timeout (ms): `keepAlive` needs a ttl of at least twice this.
    #[wasm_bindgen(getter, js_name = ioTimeout)]
    pub fn io_timeout(&self) -> f64 {
        self.0.config().io_timeout().as_secs_f64() * 1000.0
    }

    /// `try_lock`: a promise of a `RawLease`, or `null` when the name is busy. The
    /// transaction is sent before this returns.
    #[wasm_bindgen(js_name = tryLock)]
    pub fn try_lock(&self, name: &str, owner: &str, ttl_ms: f64) -> Promise {
        let fut = self.0.try_lock(name, owner, ms(ttl_ms));
        let io = self.0.config().io_timeout();
        future_to_promise(async move { lease_or_null(fut.await.map_err(err)?, io) })
    }

    /// `acquire`, bounded by `wait_ms` when given (0: as `tryLock`), driven in the
    /// background: its `done` resolves with a `RawLease`, or `null` when the wait elapsed.
    /// Polled once before this returns, so its first transaction is sent (and a `snapshot`
    /// called next sees its ticket).
    pub fn acquire(
        &self,
        name: &str,
        owner: &str,
        ttl_ms: f64,
        wait_ms: Option<f64>,
    ) -> RawPending {
        let mut fut = self.0.acquire(name, owner, ms(ttl_ms));
        if let Some(wait) = wait_ms {
            fut = fut.timeout(ms(wait));
        }
        let io = self.0.config().io_timeout();
        RawPending::drive(Box::pin(async move {
            lease_or_null(fut.await.map_err(err)?, io)
        }))
    }

    /// The live lease on `name` as `{ name, owner, token, deadline }`, or `null`.
    pub fn holder(&self, name: &str) -> Promise {
        let fut = self.0.holder(name);
        future_to_promise(async move {
            match fut.await.map_err(err)? {
                Some(lease) => info_js(&lease),
                None => Ok(JsValue::NULL),
            }
        })
    }

    /// `query`: `{ held: [{ name, owner, token, deadline }], waiting: [{ name, owner }] }`,
    /// held in grant order, waiting in request order (see [`IdbLocks::query`]).
    pub fn query(&self) -> Promise {
        let fut = self.0.query();
        future_to_promise(async move {
            let snapshot = fut.await.map_err(err)?;
            let held = Array::new();
            for lease in &snapshot.held {
                held.push(&info_js(lease)?);
            }
            let waiting = Array::new();
            for w in &snapshot.waiting {
                let obj = Object::new();
                set(&obj, "name", w.name().into());
                set(&obj, "owner", w.owner().into());
                waiting.push(&obj);
            }
            let obj = Object::new();
            set(&obj, "held", held.into());
            set(&obj, "waiting", waiting.into());
            Ok(obj.into())
        })
    }

    /// `steal`: takes `name` whoever holds it, in one transaction (its holder is told, the
    /// queue is served after): a promise of a `RawLease`. The transaction is sent before this
    /// returns.
    pub fn steal(&self, name: &str, owner: &str, ttl_ms: f64) -> Promise {
        let fut = self.0.steal(name, owner, ms(ttl_ms));
        let io = self.0.config().io_timeout();
        future_to_promise(async move { lease_or_null(Some(fut.await.map_err(err)?), io) })
    }

    /// `force_release`: the lease it ended as `{ name, owner, token, deadline }`, or `null`.
    #[wasm_bindgen(js_name = forceRelease)]
    pub fn force_release(&self, name: &str) -> Promise {
        let fut = self.0.force_release(name);
        future_to_promise(async move {
            match fut.await.map_err(err)? {
                Some(lease) => info_js(&lease),
                None => Ok(JsValue::NULL),
            }
        })
    }
}

/// A driven future's slot: `None` once it finished or was cancelled.
type Slot = Rc<RefCell<Option<Local<Result<JsValue, JsValue>>>>>;

/// A waiting `acquire` driven in the background: `done` resolves with its outcome (or with
/// `undefined` once cancelled), and `cancel()` drops the future wherever it is.
#[wasm_bindgen]
pub struct RawPending {
    fut: Slot,
    waker: Rc<Cell<Option<Waker>>>,
    done: Promise,
}

impl core::fmt::Debug for RawPending {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RawPending")
            .field("running", &self.fut.borrow().is_some())
            .finish_non_exhaustive()
    }
}

impl RawPending {
    fn drive(fut: Local<Result<JsValue, JsValue>>) -> RawPending {
        let fut: Slot = Rc::new(RefCell::new(Some(fut)));
        let waker: Rc<Cell<Option<Waker>>> = Rc::default();
        // The first poll now: it sends the first transaction.
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
                    None => Poll::Ready(Ok(JsValue::UNDEFINED)),
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
        RawPending { fut, waker, done }
    }
}

#[wasm_bindgen]
impl RawPending {
    /// Resolves with the outcome: a `RawLease`, `null` (the wait elapsed), or `undefined`
    /// once cancelled; rejects with the request's error.
    #[wasm_bindgen(getter)]
    pub fn done(&self) -> Promise {
        self.done.clone()
    }

    /// Drops the waiting future now (its ticket leaves the queue; a lease already handed to
    /// it goes on to the next waiter): `true` if it was still waiting, `false` if it had
    /// finished (then `done` has its outcome).
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
