//! A small wasm module of the kind users build: a page-wide lock registry on
//! `performance.now()` with a capacity limit, exposed to JavaScript as tryLock / renew /
//! release / holder, and with the `waiting` feature also acquire (a Promise, with a bounded
//! wait on `setTimeout`). `make size` builds it both ways for size and reports the `.wasm`
//! bytes, raw and gzipped.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(target_arch = "wasm32")]
mod exports {
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::time::Duration;

    use alkstore_mem_web::{Config, Lock, PerformanceClock, WebLock, WebLockRegistry};
    use wasm_bindgen::prelude::*;

    thread_local! {
        static REGISTRY: WebLockRegistry = WebLockRegistry::with_config(
            PerformanceClock::new(),
            Config::new().with_max_locks(10_000),
        );
        static HELD: RefCell<HashMap<u64, WebLock>> = RefCell::new(HashMap::new());
    }

    fn ttl(millis: f64) -> Duration {
        Duration::from_secs_f64((millis / 1000.0).clamp(0.0, 1e9))
    }

    /// Keeps a granted lock under its token; the token as JavaScript sees it, 0 for none.
    fn keep(lock: Option<WebLock>) -> f64 {
        lock.map_or(0.0, |lock| {
            let token = lock.token();
            HELD.with(|h| h.borrow_mut().insert(token, lock));
            token as f64
        })
    }

    /// Takes `name` for `owner` for `ttl_ms`; returns the fencing token, 0 when busy.
    /// Throws the error message on bad input.
    #[wasm_bindgen(js_name = tryLock)]
    pub fn try_lock(name: &str, owner: &str, ttl_ms: f64) -> Result<f64, JsError> {
        let lock = REGISTRY.with(|r| r.try_lock(name, owner, ttl(ttl_ms)))?;
        Ok(keep(lock))
    }

    /// Waits up to `wait_ms` for `name`, then holds it for `ttl_ms`: a Promise of the fencing
    /// token, 0 when the wait elapsed. Rejects with the error message on bad input.
    #[cfg(feature = "waiting")]
    #[wasm_bindgen]
    pub async fn acquire(
        name: String,
        owner: String,
        ttl_ms: f64,
        wait_ms: f64,
    ) -> Result<f64, JsError> {
        let waiting =
            REGISTRY.with(|r| r.acquire(&name, &owner, ttl(ttl_ms)).timeout(ttl(wait_ms)));
        Ok(keep(waiting.await?))
    }

    /// Renews the lease with `token` for `ttl_ms` from now; throws when it lapsed.
    #[wasm_bindgen]
    pub fn renew(token: f64, ttl_ms: f64) -> Result<(), JsError> {
        HELD.with(|h| match h.borrow_mut().get_mut(&(token as u64)) {
            Some(lock) => Ok(lock.renew(ttl(ttl_ms))?),
            None => Err(JsError::new("no such lease")),
        })
    }

    /// Releases the lease with `token`; `true` if it was still live.
    #[wasm_bindgen]
    pub fn release(token: f64) -> bool {
        HELD.with(|h| h.borrow_mut().remove(&(token as u64)))
            .is_some_and(Lock::release)
    }

    /// The owner holding `name`, or `undefined`.
    #[wasm_bindgen]
    pub fn holder(name: &str) -> Option<String> {
        REGISTRY
            .with(|r| r.holder(name))
            .map(|info| info.owner().to_owned())
    }
}
