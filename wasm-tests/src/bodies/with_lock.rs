//! [`with_lock`]: acquire, run, keep alive, release, on any engine.

use core::cell::Cell;
use core::future::poll_fn;
use core::task::Poll;

use alkstore_mem::{LockError, LockOptions, LockStore, with_lock};

use super::{grant, holder_of, open};
use crate::engine::Engine;
use crate::support::{drive_pending, eventually, renewed, secs};

/// `with_lock` runs the body while holding the lock, hands it the lease, returns its value
/// and releases the lock afterwards.
pub async fn with_lock_runs_the_body_and_releases<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let options = LockOptions::ttl(secs(30)).wait(secs(10));
    let seen = with_lock(&store, "job", "a", options, |lease| {
        let store = store.clone();
        async move {
            let info = store
                .holder("job")
                .await
                .unwrap()
                .expect("held in the body");
            assert_eq!(info, lease);
            (
                lease.name().to_owned(),
                lease.owner().to_owned(),
                lease.token(),
            )
        }
    })
    .await
    .unwrap()
    .expect("the name was free");
    assert_eq!((seen.0.as_str(), seen.1.as_str()), ("job", "a"));
    assert_eq!(holder_of(&store, "job").await, None, "released afterwards");
    let next = grant(&store, "job", "b", secs(10)).await;
    assert!(alkstore_mem::LockHandle::token(&next) > seen.2);
}

/// When the wait elapses without a grant, `with_lock` answers `Ok(None)` and the body
/// never runs.
pub async fn with_lock_returns_none_when_the_wait_elapses<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let holder = grant(&store, "job", "a", secs(100)).await;
    let ran = Cell::new(false);
    let outcome = {
        let options = LockOptions::ttl(secs(10)).wait(secs(10));
        let mut work = Box::pin(with_lock(&store, "job", "b", options, |_| {
            ran.set(true);
            async {}
        }));
        drive_pending(&store, &mut work, "with_lock on a busy name").await;
        engine.advance(&store, secs(10)).await;
        eventually(&store, &mut work, "with_lock after its wait").await
    };
    assert_eq!(outcome, Ok(None));
    assert!(!ran.get(), "the body ran without the lock");
    assert!(alkstore_mem::LockHandle::is_held(&holder).await.unwrap());
}

/// Asked to, `with_lock` keeps the lease alive while the body runs (renewing to the ttl
/// every third of it), across advances well past the first deadline; it releases when the
/// body ends.
pub async fn with_lock_keeps_the_lease_alive_while_the_body_runs<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let done = Cell::new(false);
    let outcome = {
        let options = LockOptions::ttl(secs(30))
            .wait(secs(10))
            .keep_alive(secs(0));
        let mut work = Box::pin(with_lock(&store, "job", "a", options, |lease| {
            let done = &done;
            poll_fn(move |_| match done.get() {
                true => Poll::Ready(lease.token()),
                false => Poll::Pending,
            })
        }));
        drive_pending(&store, &mut work, "with_lock while its body runs").await;
        let mut deadline = store.holder("job").await.unwrap().expect("held").deadline();
        for _ in 0..5 {
            engine.advance(&store, secs(10)).await;
            deadline = renewed(&store, &mut work, "job", deadline).await;
        }
        done.set(true);
        eventually(&store, &mut work, "with_lock after its body ended").await
    };
    let token = outcome.unwrap().expect("granted");
    assert!(token > 0);
    assert_eq!(holder_of(&store, "job").await, None, "released afterwards");
}

/// When the lease is lost while the body runs, `with_lock` stops the body and returns the
/// renewal's `Expired`.
pub async fn with_lock_returns_expired_when_the_lease_is_lost<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let outcome = {
        let options = LockOptions::ttl(secs(30))
            .wait(secs(10))
            .keep_alive(secs(0));
        let mut work = Box::pin(with_lock(&store, "job", "a", options, |_| {
            futures_lite::future::pending::<()>()
        }));
        drive_pending(&store, &mut work, "with_lock while its body runs").await;
        // Past the deadline in one step: the first renewal comes too late.
        engine.advance(&store, secs(60)).await;
        eventually(&store, &mut work, "with_lock after its lease lapsed").await
    };
    match outcome {
        Err(LockError::Expired { name, .. }) => assert_eq!(name, "job"),
        other => panic!("expected Expired, got {other:?}"),
    }
    assert_eq!(holder_of(&store, "job").await, None);
}

/// Without keep-alive, the body must finish within the ttl: at the deadline `with_lock`
/// stops it and returns `Expired`, and the name is free.
pub async fn with_lock_without_keep_alive_stops_the_body_at_the_deadline<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let outcome = {
        let options = LockOptions::ttl(secs(30));
        let mut work = Box::pin(with_lock(&store, "job", "a", options, |_| {
            futures_lite::future::pending::<()>()
        }));
        drive_pending(&store, &mut work, "with_lock while its body runs").await;
        engine.advance(&store, secs(20)).await;
        drive_pending(&store, &mut work, "with_lock before the deadline").await;
        assert!(
            holder_of(&store, "job").await.is_some(),
            "held while the body runs"
        );
        engine.advance(&store, secs(10)).await;
        eventually(&store, &mut work, "with_lock at its deadline").await
    };
    match outcome {
        Err(LockError::Expired { name, ttl, .. }) => {
            assert_eq!((name.as_str(), ttl), ("job", secs(30)));
        }
        other => panic!("expected Expired, got {other:?}"),
    }
    assert_eq!(holder_of(&store, "job").await, None);
}

/// An operator's `force_release` stops a running body at once (with or without keep-alive),
/// and the next grant carries a larger token.
pub async fn with_lock_stops_the_body_when_force_released<E: Engine>(engine: &E) {
    for keep_alive in [false, true] {
        let store = open(engine).await;
        let mut options = LockOptions::ttl(secs(30));
        if keep_alive {
            options = options.keep_alive(secs(10));
        }
        let token = Cell::new(0);
        let outcome = {
            let mut work = Box::pin(with_lock(&store, "job", "a", options, |lease| {
                token.set(lease.token());
                futures_lite::future::pending::<()>()
            }));
            drive_pending(&store, &mut work, "with_lock while its body runs").await;
            let ended = store.force_release("job").await.unwrap().expect("held");
            assert_eq!(ended.token(), token.get());
            eventually(&store, &mut work, "with_lock after a force-release").await
        };
        assert!(
            matches!(outcome, Err(LockError::Expired { ref name, .. }) if name == "job"),
            "keep_alive {keep_alive}: expected Expired, got {outcome:?}"
        );
        let next = grant(&store, "job", "b", secs(10)).await;
        assert!(alkstore_mem::LockHandle::token(&next) > token.get());
    }
}

/// A body that runs on past the deadline (here: it moves time itself, which in memory never
/// yields) cannot be stopped, but its value is not returned as if it ran under the lock:
/// `with_lock` answers `Expired`.
pub async fn with_lock_body_that_outlives_its_lease_is_an_error_not_a_value<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let options = LockOptions::ttl(secs(30));
    let outcome = with_lock(&store, "job", "a", options, |_| async {
        engine.advance(&store, secs(40)).await;
        7
    })
    .await;
    match outcome {
        Err(LockError::Expired { name, .. }) => assert_eq!(name, "job"),
        other => panic!("expected Expired, got {other:?}"),
    }
    assert_eq!(holder_of(&store, "job").await, None);
}
