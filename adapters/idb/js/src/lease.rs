//! [`RawLease`]: a held `IdbLock` for JavaScript, with its keep-alive and lapse watches.
//!
//! `IdbLock::release(self)` consumes the handle while `keep_alive(&self)` and `lapsed(&self)`
//! borrow it, so the handle lives in an `Rc` inside a `RefCell<Hold>`: each watch's future
//! owns a clone of the `Rc`, and sits in a slot of its own that `release()` and `detach()`
//! empty (dropping the future, and with it the clone) before they take the handle out and
//! unwrap it. `renew(&mut self)` pauses the running watches the same way, renews the handle
//! it then owns alone, puts it back and starts the paused watches again on it: the promise a
//! watch handed out stays the same across renewals. The watches themselves are in
//! `watch.rs`.

use core::cell::{Cell, RefCell};
use core::time::Duration;
use std::rc::Rc;

use alkstore_idb::{IdbLock, LockError, TtlProblem};
use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::error::{epoch_ms, err, ms, released, token_js};
use crate::watch::{Kind, Watch};

/// Where the handle is.
enum Hold {
    /// Held here; watches own clones of the `Rc`.
    Here(Rc<IdbLock>),
    /// Out for a renewal, which puts it back.
    Renewing,
    /// Released or detached.
    Gone,
}

struct Inner {
    hold: RefCell<Hold>,
    watches: RefCell<Vec<Rc<Watch>>>,
    /// The deadline last read (epoch ms), answered while a renewal has the handle.
    deadline: Cell<f64>,
    ttl: Cell<f64>,
    /// The store's io timeout: `keepAlive` needs a ttl of at least twice this.
    io_timeout: Duration,
}

impl Inner {
    fn lock(&self) -> Option<Rc<IdbLock>> {
        match &*self.hold.borrow() {
            Hold::Here(lock) => Some(Rc::clone(lock)),
            Hold::Renewing | Hold::Gone => None,
        }
    }

    fn watches(&self) -> Vec<Rc<Watch>> {
        self.watches.borrow().clone()
    }

    /// Stops every watch (their promises resolve with `null`), dropping their futures.
    fn stop_watches(&self) {
        let watches = core::mem::take(&mut *self.watches.borrow_mut());
        for w in watches {
            w.stop();
        }
    }

    /// Takes the handle out, once no watch holds a clone of it.
    fn take(&self, then: Hold) -> Result<IdbLock, JsValue> {
        let hold = self.hold.replace(then);
        match hold {
            Hold::Here(lock) => Rc::try_unwrap(lock).map_err(|lock| {
                // Unreachable: every clone lives in a watch's future, dropped above.
                *self.hold.borrow_mut() = Hold::Here(lock);
                crate::error::unavailable("the lease is still borrowed by a running watch")
            }),
            Hold::Renewing => {
                *self.hold.borrow_mut() = Hold::Renewing;
                Err(busy())
            }
            Hold::Gone => Err(released()),
        }
    }

    /// Remembers what the handle says of its deadline and ttl.
    fn remember(&self, lock: &IdbLock) {
        self.deadline.set(epoch_ms(lock.deadline()));
        self.ttl.set(lock.ttl().as_secs_f64() * 1000.0);
    }
}

/// A `renew` runs: the handle is out.
fn busy() -> JsValue {
    let obj: js_sys::Object =
        js_sys::Error::new("a renew of this lease is in flight: await it first").into();
    crate::error::set(&obj, "name", "InvalidStateError".into());
    obj.into()
}

/// A held lease: an [`IdbLock`]. Deadlines are epoch milliseconds, durations milliseconds.
#[wasm_bindgen]
pub struct RawLease {
    inner: Rc<Inner>,
    name: String,
    owner: String,
    token: f64,
}

impl core::fmt::Debug for RawLease {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RawLease")
            .field("name", &self.name)
            .field("owner", &self.owner)
            .field("token", &self.token)
            .field("deadline", &self.inner.deadline.get())
            .finish_non_exhaustive()
    }
}

impl RawLease {
    /// Wraps a granted lock from a store whose io timeout is `io_timeout`; a token that
    /// does not fit a JavaScript number (never granted by the engine) releases the lock and
    /// fails.
    pub(crate) fn new(lock: IdbLock, io_timeout: Duration) -> Result<RawLease, JsValue> {
        let token = token_js(lock.token())?;
        let lease = RawLease {
            name: lock.name().into(),
            owner: lock.owner().into(),
            token,
            inner: Rc::new(Inner {
                deadline: Cell::new(0.0),
                ttl: Cell::new(0.0),
                io_timeout,
                hold: RefCell::new(Hold::Gone),
                watches: RefCell::default(),
            }),
        };
        lease.inner.remember(&lock);
        *lease.inner.hold.borrow_mut() = Hold::Here(Rc::new(lock));
        Ok(lease)
    }

    /// Starts a watch of `kind`: its promise resolves with the error the lease was lost
    /// with, or `null` once stopped.
    fn watch(&self, kind: Kind) -> Promise {
        let Some(lock) = self.inner.lock() else {
            let why = match &*self.inner.hold.borrow() {
                Hold::Renewing => busy(),
                _ => released(),
            };
            return Promise::reject(&why);
        };
        let watch = Watch::start(lock, kind);
        {
            let mut watches = self.inner.watches.borrow_mut();
            watches.retain(|w| !w.is_stopped());
            watches.push(Rc::clone(&watch));
        }
        watch.promise()
    }
}

#[wasm_bindgen]
impl RawLease {
    /// The lock's name.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// The owner the lease was granted to.
    #[wasm_bindgen(getter)]
    pub fn owner(&self) -> String {
        self.owner.clone()
    }

    /// The fencing token (below 2^53).
    #[wasm_bindgen(getter)]
    pub fn token(&self) -> f64 {
        self.token
    }

    /// The deadline (epoch ms) as of the last grant or renewal, keep-alive's included.
    #[wasm_bindgen(getter)]
    pub fn deadline(&self) -> f64 {
        if let Some(lock) = self.inner.lock() {
            self.inner.remember(&lock);
        }
        self.inner.deadline.get()
    }

    /// The ttl (ms) of the last grant or renewal: what `keepAlive` renews to.
    #[wasm_bindgen(getter)]
    pub fn ttl(&self) -> f64 {
        if let Some(lock) = self.inner.lock() {
            self.inner.remember(&lock);
        }
        self.inner.ttl.get()
    }

    /// Why the lease is gone, when known without a transaction (a renewal or look found it
    /// gone, or its deadline passed on this context's clock estimate): an `ExpiredError`
    /// (or an `UnavailableError` when it went with its database); `null` when nothing is
    /// known, and after release.
    #[wasm_bindgen(js_name = knownLost)]
    pub fn known_lost(&self) -> JsValue {
        self.inner
            .lock()
            .and_then(|lock| lock.known_lost())
            .map_or(JsValue::NULL, err)
    }

    /// Whether `release()` or `detach()` was called.
    #[wasm_bindgen(getter)]
    pub fn released(&self) -> bool {
        matches!(*self.inner.hold.borrow(), Hold::Gone)
    }

    /// Whether the lease is still live now (one transaction).
    #[wasm_bindgen(js_name = isHeld)]
    pub fn is_held(&self) -> Promise {
        match self.inner.lock() {
            Some(lock) => {
                let fut = lock.is_held();
                future_to_promise(async move { Ok(fut.await.map_err(err)?.into()) })
            }
            None => Promise::reject(&released()),
        }
    }

    /// Resets the deadline to now + `ttl_ms` and keeps the token; a running `keepAlive`
    /// goes on with the new ttl. Rejects with `InvalidTtlError` for a zero ttl, or one a
    /// running `keepAlive` could not keep (below twice the io timeout),
    /// `ExpiredError` when the lease was lost, `UnavailableError` when the transaction
    /// failed, `InvalidStateError` after release or during another renew.
    pub fn renew(&self, ttl_ms: f64) -> Promise {
        match &*self.inner.hold.borrow() {
            Hold::Here(_) => {}
            Hold::Renewing => return Promise::reject(&busy()),
            Hold::Gone => return Promise::reject(&released()),
        }
        // A running keepAlive could not keep the shorter ttl: refuse it here, not as a
        // keepAlive that ends later as if the lease were lost.
        let (ttl, io) = (ms(ttl_ms), self.inner.io_timeout);
        let keeping = self.inner.watches().iter().any(|w| w.is_keeping_alive());
        if keeping && ttl < io.saturating_mul(2) {
            let problem = TtlProblem::TooShortToKeepAlive { io_timeout: io };
            return Promise::reject(&err(LockError::InvalidTtl { ttl, problem }));
        }
        // Pause the running watches (dropping their clones of the handle), take the handle,
        // renew it, put it back and start the paused watches again on it.
        let inner = Rc::clone(&self.inner);
        let watches = inner.watches();
        for w in &watches {
            w.pause();
        }
        let resume = move |inner: &Inner, lock: Rc<IdbLock>| {
            inner.remember(&lock);
            for w in &watches {
                w.resume(&lock);
            }
            *inner.hold.borrow_mut() = Hold::Here(lock);
        };
        let mut lock = match inner.take(Hold::Renewing) {
            Ok(lock) => lock,
            Err(why) => {
                // Unreachable (every clone lived in a paused watch): take() put the handle
                // back; let the watches go on with it.
                if let Some(lock) = inner.lock() {
                    resume(&inner, lock);
                }
                return Promise::reject(&why);
            }
        };
        future_to_promise(async move {
            let out = lock.renew(ms(ttl_ms)).await;
            resume(&inner, Rc::new(lock));
            out.map(|()| JsValue::UNDEFINED).map_err(err)
        })
    }

    /// Releases the lease: resolves with `true` when it was live and is now free (or handed
    /// to the first waiter), `false` when it had lapsed or was force-released. Stops every
    /// watch first (their promises resolve with `null`). The transaction is sent before this
    /// returns.
    pub fn release(&self) -> Promise {
        self.inner.stop_watches();
        match self.inner.take(Hold::Gone) {
            Ok(lock) => {
                let fut = lock.release();
                future_to_promise(async move { Ok(fut.await.map_err(err)?.into()) })
            }
            Err(why) => Promise::reject(&why),
        }
    }

    /// Gives up the handle without releasing: the lease runs to its deadline. Stops every
    /// watch. Throws `InvalidStateError` after release or during a renew.
    pub fn detach(&self) -> Result<(), JsValue> {
        self.inner.stop_watches();
        self.inner.take(Hold::Gone).map(IdbLock::detach)
    }

    /// Renews the lease to its ttl every `every_ms` (0: a third of the ttl; above half the
    /// ttl: half) until it is lost, released or detached. Resolves with the error it was
    /// lost with (`ExpiredError`, or `UnavailableError` when IndexedDB failed for good), or
    /// `null` once stopped by `release()`, `detach()` or `stopWatches()`. Rejects at once,
    /// with `InvalidTtlError`, when the ttl is below twice the store's io timeout (a renewal
    /// could not finish before the deadline), and after release.
    #[wasm_bindgen(js_name = keepAlive)]
    pub fn keep_alive(&self, every_ms: f64) -> Promise {
        if let Some(lock) = self.inner.lock() {
            let ttl = lock.ttl();
            let io = self.inner.io_timeout;
            if ttl < io.saturating_mul(2) {
                return Promise::reject(&err(LockError::InvalidTtl {
                    ttl,
                    problem: TtlProblem::TooShortToKeepAlive { io_timeout: io },
                }));
            }
        }
        self.watch(Kind::KeepAlive(ms(every_ms)))
    }

    /// Resolves once the lease is no longer held, with the reason (`ExpiredError`), or with
    /// `null` once stopped by `release()`, `detach()` or `stopWatches()`.
    pub fn lapsed(&self) -> Promise {
        self.watch(Kind::Lapsed)
    }

    /// Stops every running `keepAlive` and `lapsed` (their promises resolve with `null`).
    #[wasm_bindgen(js_name = stopWatches)]
    pub fn stop_watches(&self) {
        self.inner.stop_watches();
    }
}
