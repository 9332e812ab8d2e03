//! `Locks`: an `IdbLocks` for JavaScript.

use core::cell::Cell;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Waker};
use std::rc::Rc;

use alkstore_idb::{IdbConfig, IdbLocks};
use alkstore_mem::{LockOptions, with_lock};
use js_sys::{Array, Object, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::js::{err, info_js, ms, set, sleep_ms};
use crate::lock::Lock;
use crate::pending::Pending;

/// Locks shared by every page and worker that open the same database name.
#[wasm_bindgen]
#[derive(Debug, Clone)]
pub struct Locks(IdbLocks);

impl Locks {
    pub(crate) fn inner(&self) -> &IdbLocks {
        &self.0
    }
}

fn lock_or_null(lock: Option<alkstore_idb::IdbLock>) -> JsValue {
    lock.map_or(JsValue::NULL, |l| Lock::from(l).into())
}

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

    /// This context's id in the rows (`null` without Web Locks).
    #[wasm_bindgen(js_name = contextId)]
    pub fn context_id(&self) -> Option<String> {
        self.0.context_id()
    }

    /// `try_lock`: a `Lock` or `null`.
    #[wasm_bindgen(js_name = tryLock)]
    pub fn try_lock(&self, name: String, owner: String, ttl_ms: f64) -> Promise {
        let fut = self.0.try_lock(&name, &owner, ms(ttl_ms));
        future_to_promise(async move { Ok(lock_or_null(fut.await.map_err(err)?)) })
    }

    /// `try_lock`, its future dropped `polls` polls in (0: never polled); `true` if it
    /// resolved first.
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

    /// `acquire`, bounded by `wait_ms` when given: a promise of a `Lock`, or `null` when the
    /// wait elapsed. Its first transaction is sent before this returns.
    pub fn acquire(
        &self,
        name: String,
        owner: String,
        ttl_ms: f64,
        wait_ms: Option<f64>,
    ) -> Promise {
        self.acquire_pending(name, owner, ttl_ms, wait_ms).done()
    }

    /// `acquire` (bounded by `wait_ms` when given), driven in the background: a `Pending`
    /// whose `done` gives a `Lock` or `null`, and whose `cancel()` drops the future wherever
    /// it is. Polled once before this returns (its first step is sent).
    #[wasm_bindgen(js_name = acquirePending)]
    pub fn acquire_pending(
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
            Ok(lock_or_null(fut.await.map_err(err)?))
        }))
    }

    /// `try_lock` driven as a `Pending` (so that it can be cancelled).
    #[wasm_bindgen(js_name = tryLockPending)]
    pub fn try_lock_pending(&self, name: String, owner: String, ttl_ms: f64) -> Pending {
        let fut = self.0.try_lock(&name, &owner, ms(ttl_ms));
        Pending::drive(Box::pin(async move {
            Ok(lock_or_null(fut.await.map_err(err)?))
        }))
    }

    /// The live lease on `name` (`{ name, owner, token, deadline, deadlineUs }`) or `null`.
    pub fn holder(&self, name: String) -> Promise {
        let fut = self.0.holder(&name);
        future_to_promise(async move {
            Ok(fut
                .await
                .map_err(err)?
                .map_or(JsValue::NULL, |l| info_js(&l)))
        })
    }

    /// `snapshot`: `{ held: [lease], waiting: [{ name, owner }] }`.
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

    /// `force_release`: the ended lease, or `null`.
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
    /// `{ ok: lease|null }` or `{ error }`, with `bodyEnded` (whether the body ran to its end).
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
