//! `keep_alive` and `lapsed`: a lease kept across time that moves, and the signal that it
//! is gone.

use core::time::Duration;

use alkstore_mem::{LockError, LockHandle};

use super::{grant, holder_of, open};
use crate::engine::Engine;
use crate::support::{drive_pending, eventually, renewed, secs};

/// Keeps a 30 s lease alive with `keep_alive(every)` across five 10 s advances (50 s, well
/// past the first deadline), checking that each step renewed it.
async fn keep_alive_across_advances<E: Engine>(engine: &E, every: Duration) {
    let store = open(engine).await;
    let mut lock = grant(&store, "job", "a", secs(30)).await;
    let token = lock.token();
    let mut deadline = lock.deadline();
    {
        let mut alive = Box::pin(lock.keep_alive(every));
        drive_pending(&store, &mut alive, "keep-alive").await;
        for _ in 0..5 {
            engine.advance(&store, secs(10)).await;
            deadline = renewed(&store, &mut alive, "job", deadline).await;
        }
    }
    assert!(
        lock.is_held().await.unwrap(),
        "kept alive for 50 s on a 30 s ttl"
    );
    assert_eq!(holder_of(&store, "job").await, Some(("a".into(), token)));
    assert_eq!(lock.ttl(), secs(30), "renewed to its own ttl");
}

/// `keep_alive` renews the lease every `every`, so it outlives its ttl many times over.
pub async fn keep_alive_keeps_the_lease_across_several_advances<E: Engine>(engine: &E) {
    keep_alive_across_advances(engine, secs(10)).await;
}

/// `keep_alive(ZERO)` renews every third of the ttl.
pub async fn keep_alive_with_zero_every_renews_every_third_of_the_ttl<E: Engine>(engine: &E) {
    keep_alive_across_advances(engine, Duration::ZERO).await;
}

/// When the lease is lost before a renewal (here: the ttl is shorter than `every`),
/// `keep_alive` returns `Expired` for it.
pub async fn keep_alive_returns_expired_once_the_lease_is_lost<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let mut lock = grant(&store, "job", "a", secs(10)).await;
    let token = lock.token();
    let lost = {
        let mut alive = Box::pin(lock.keep_alive(secs(20)));
        drive_pending(&store, &mut alive, "keep-alive").await;
        engine.advance(&store, secs(5)).await;
        drive_pending(&store, &mut alive, "keep-alive before its first renewal").await;
        // The lease lapses at 10 s, before the first renewal (due at 20 s): an engine may
        // notice at the lapse or at the renewal; by 20 s the keep-alive must have given up.
        engine.advance(&store, secs(15)).await;
        eventually(&store, &mut alive, "keep-alive of a lapsed lease").await
    };
    match lost {
        LockError::Expired { name, token: t, .. } => assert_eq!((name.as_str(), t), ("job", token)),
        other => panic!("expected Expired, got {other:?}"),
    }
    assert!(!lock.is_held().await.unwrap());
    assert_eq!(holder_of(&store, "job").await, None);
}

/// `lapsed` stays pending while the lease is live and resolves once it lapsed.
pub async fn lapsed_resolves_after_the_deadline_and_not_before<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let lock = grant(&store, "job", "a", secs(10)).await;
    {
        let mut lapsed = Box::pin(lock.lapsed());
        drive_pending(&store, &mut lapsed, "lapsed on a live lease").await;
        engine.advance(&store, secs(5)).await;
        drive_pending(&store, &mut lapsed, "lapsed halfway through the lease").await;
        engine.advance(&store, secs(5)).await;
        eventually(&store, &mut lapsed, "lapsed at the deadline").await;
    }
    assert!(!lock.is_held().await.unwrap());
}

/// `lapsed` on a lease that already lapsed resolves without time moving.
pub async fn lapsed_resolves_at_once_for_a_lapsed_lease<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let lock = grant(&store, "job", "a", secs(10)).await;
    engine.advance(&store, secs(20)).await;
    let mut lapsed = Box::pin(lock.lapsed());
    eventually(&store, &mut lapsed, "lapsed on a lapsed lease").await;
}
