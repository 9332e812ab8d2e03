//! The JavaScript classes (see the crate docs).

use core::cell::RefCell;
use core::future::Future;
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::rc::Rc;

use alkstore_idb::{IdbConfig, IdbLock, IdbLocks, LockError};
use js_sys::{Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

fn err(e: LockError) -> JsValue {
    JsValue::from_str(&e.to_string())
}

fn ms(millis: f64) -> Duration {
    Duration::from_secs_f64(millis.max(0.0) / 1000.0)
}

fn set(obj: &Object, key: &str, value: JsValue) {
    let _ = Reflect::set(obj, &JsValue::from_str(key), &value);
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

    /// `acquire`, bounded by `wait_ms` when given: a `Lock`, or `null` when the wait elapsed.
    /// Its first transaction is sent before this returns.
    pub fn acquire(
        &self,
        name: String,
        owner: String,
        ttl_ms: f64,
        wait_ms: Option<f64>,
    ) -> Promise {
        let mut fut = self.0.acquire(&name, &owner, ms(ttl_ms));
        if let Some(wait) = wait_ms {
            fut = fut.timeout(ms(wait));
        }
        let mut fut = Box::pin(fut);
        // The first poll sends the first step; a grant is picked up by the next.
        let first = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        future_to_promise(async move {
            let out = match first {
                Poll::Ready(out) => out,
                Poll::Pending => fut.await,
            };
            Ok(out
                .map_err(err)?
                .map_or(JsValue::NULL, |l| Lock::from(l).into()))
        })
    }

    /// The live lease on `name` as `{ owner, token, deadline }` (deadline in ms since the
    /// epoch), or `null`.
    pub fn holder(&self, name: String) -> Promise {
        let fut = self.0.holder(&name);
        future_to_promise(async move {
            let Some(lease) = fut.await.map_err(err)? else {
                return Ok(JsValue::NULL);
            };
            let obj = Object::new();
            set(&obj, "owner", lease.owner().into());
            set(&obj, "token", (lease.token() as f64).into());
            set(
                &obj,
                "deadline",
                (lease.deadline().as_nanos() as f64 / 1e6).into(),
            );
            Ok(obj.into())
        })
    }

    /// `snapshot`: `{ held: [{ name, owner, token, deadline }], waiting: [{ name, owner }] }`.
    pub fn snapshot(&self) -> Promise {
        let fut = self.0.snapshot();
        future_to_promise(async move {
            let snapshot = fut.await.map_err(err)?;
            let held = js_sys::Array::new();
            for lease in &snapshot.held {
                let obj = Object::new();
                set(&obj, "name", lease.name().into());
                set(&obj, "owner", lease.owner().into());
                set(&obj, "token", (lease.token() as f64).into());
                set(
                    &obj,
                    "deadline",
                    (lease.deadline().as_nanos() as f64 / 1e6).into(),
                );
                held.push(&obj);
            }
            let waiting = js_sys::Array::new();
            for waiter in &snapshot.waiting {
                let obj = Object::new();
                set(&obj, "name", waiter.name.as_str().into());
                set(&obj, "owner", waiter.owner.as_str().into());
                waiting.push(&obj);
            }
            let obj = Object::new();
            set(&obj, "held", held.into());
            set(&obj, "waiting", waiting.into());
            Ok(obj.into())
        })
    }

    /// `force_release`: the ended lease's owner, or `null`.
    #[wasm_bindgen(js_name = forceRelease)]
    pub fn force_release(&self, name: String) -> Promise {
        let fut = self.0.force_release(&name);
        future_to_promise(async move {
            Ok(fut
                .await
                .map_err(err)?
                .map_or(JsValue::NULL, |l| l.owner().into()))
        })
    }
}

/// A held lease.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Lock {
    lock: Rc<RefCell<Option<IdbLock>>>,
    token: u64,
    deadline_ms: f64,
}

impl From<IdbLock> for Lock {
    fn from(lock: IdbLock) -> Self {
        Lock {
            token: lock.token(),
            deadline_ms: lock.deadline().as_nanos() as f64 / 1e6,
            lock: Rc::new(RefCell::new(Some(lock))),
        }
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

    /// `release`: whether the lease was still live.
    pub fn release(&self) -> Promise {
        let lock = self.lock.borrow_mut().take();
        future_to_promise(async move {
            let Some(lock) = lock else {
                return Err(JsValue::from_str("released already"));
            };
            Ok(lock.release().await.map_err(err)?.into())
        })
    }

    /// `is_held`.
    #[wasm_bindgen(js_name = isHeld)]
    pub fn is_held(&self) -> Promise {
        let fut = self.lock.borrow().as_ref().map(IdbLock::is_held);
        future_to_promise(async move {
            match fut {
                Some(fut) => Ok(fut.await.map_err(err)?.into()),
                None => Ok(false.into()),
            }
        })
    }

    /// `detach`: the lease runs to its deadline.
    pub fn detach(&self) {
        if let Some(lock) = self.lock.borrow_mut().take() {
            lock.detach();
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

/// `n` try_lock + release cycles on `name`, timed in Rust: the elapsed ms.
#[wasm_bindgen(js_name = benchCycles)]
pub fn bench_cycles(locks: &Locks, name: String, n: u32) -> Promise {
    let locks = locks.clone();
    future_to_promise(async move { cycles(locks, name, n).await.map(JsValue::from) })
}

async fn cycles(locks: Locks, name: String, n: u32) -> Result<f64, JsValue> {
    let t0 = performance_now();
    for _ in 0..n {
        let lock = locks
            .0
            .try_lock(&name, "bench", Duration::from_secs(30))
            .await
            .map_err(err)?
            .ok_or_else(|| JsValue::from_str("bench name busy"))?;
        if !lock.release().await.map_err(err)? {
            return Err(JsValue::from_str("bench lease lapsed"));
        }
    }
    Ok(performance_now() - t0)
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;
}
