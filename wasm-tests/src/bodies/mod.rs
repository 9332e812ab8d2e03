//! The contract's test bodies, one `async fn` per rule, generic over the [`Engine`].
//!
//! Each body opens its own store, talks to it only through the contract traits
//! ([`LockStore`], [`LockHandle`](alkstore_mem::LockHandle),
//! [`AcquireFuture`](alkstore_mem::AcquireFuture)) and [`with_lock`](alkstore_mem::with_lock),
//! and moves time only with [`Engine::advance`]. Token values are compared, never
//! asserted; durations are whole seconds and advances match them, so a remote engine's
//! round trips (and the real time they take) change no answer.
//!
//! [`conformance_suite!`](crate::conformance_suite) turns every body into a test.

use core::time::Duration;

use alkstore_mem::LockStore;

use crate::engine::{Engine, Limits};

pub mod admin;
pub mod exclusion;
pub mod liveness;
pub mod release;
pub mod renew;
pub mod tokens;
pub mod validation;
pub mod waiting;
pub mod with_lock;

/// A fresh store with the default limits.
async fn open<E: Engine>(engine: &E) -> E::Store {
    engine.open(Limits::default()).await
}

/// `try_lock` that must be granted.
async fn grant<S: LockStore>(store: &S, name: &str, owner: &str, ttl: Duration) -> S::Lock {
    match store.try_lock(name, owner, ttl).await {
        Ok(Some(lock)) => lock,
        Ok(None) => panic!("{owner:?} was refused {name:?}, which should be free"),
        Err(err) => panic!("{owner:?} asking for {name:?}: {err}"),
    }
}

/// Whether `try_lock` is answered with `Ok(None)` (busy).
async fn busy<S: LockStore>(store: &S, name: &str, owner: &str) -> bool {
    store
        .try_lock(name, owner, Duration::from_secs(10))
        .await
        .expect("a valid try_lock")
        .is_none()
}

/// The owner and token of the live lease on `name`, if any.
async fn holder_of<S: LockStore>(store: &S, name: &str) -> Option<(String, u64)> {
    store
        .holder(name)
        .await
        .expect("the store answers holder()")
        .map(|lease| (lease.owner().to_owned(), lease.token()))
}
