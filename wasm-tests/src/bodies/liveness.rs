//! `keep_alive` and `lapsed`: a lease kept across time that moves, and the signal that it
//! is gone.

use core::time::Duration;

use alkstore_mem::{LockError, LockHandle, LockStore};

use super::{grant, holder_of, open};
use crate::engine::Engine;
use crate::support::{drive_pending, eventually, renewed, secs};

/// Keeps a 30 s lease alive with `keep_alive(every)` across five 10 s advances (50 s, well
/// past the first deadline), checking that each step renewed it.
async fn keep_alive_across_advances<E: Engine>(engine: &E, every: Duration) {
    let store = open(engine).await;
    let lock = grant(&store, "job", "a", secs(30)).await;
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

/// When the lease is lost before a renewal (time jumps past the deadline in one step),
/// `keep_alive` returns `Expired` for it.
pub async fn keep_alive_returns_expired_once_the_lease_is_lost<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let lock = grant(&store, "job", "a", secs(10)).await;
    let token = lock.token();
    let lost = {
        let mut alive = Box::pin(lock.keep_alive(secs(4)));
        drive_pending(&store, &mut alive, "keep-alive").await;
        engine.advance(&store, secs(30)).await;
        eventually(&store, &mut alive, "keep-alive of a lapsed lease").await
    };
    match lost {
        LockError::Expired { name, token: t, .. } => assert_eq!((name.as_str(), t), ("job", token)),
        other => panic!("expected Expired, got {other:?}"),
    }
    assert!(!lock.is_held().await.unwrap());
    assert_eq!(holder_of(&store, "job").await, None);
}

/// An interval at or above the ttl is clamped to half the ttl, so a typo cannot turn
/// keep-alive off: `keep_alive(20 s)` on a 10 s lease still renews it by the 5 s mark.
pub async fn keep_alive_clamps_an_interval_above_half_the_ttl<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let lock = grant(&store, "job", "a", secs(10)).await;
    let mut deadline = lock.deadline();
    {
        let mut alive = Box::pin(lock.keep_alive(secs(20)));
        drive_pending(&store, &mut alive, "keep-alive").await;
        for _ in 0..4 {
            engine.advance(&store, secs(5)).await;
            deadline = renewed(&store, &mut alive, "job", deadline).await;
        }
    }
    assert!(lock.is_held().await.unwrap(), "kept for 20 s on a 10 s ttl");
}

/// `keep_alive` borrows the handle shared: the work it guards reads `token`, `deadline`
/// and `is_held` meanwhile, and the handle's deadline follows the renewals.
pub async fn keep_alive_lets_the_work_read_the_handle<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let lock = grant(&store, "job", "a", secs(30)).await;
    let first = lock.deadline();
    let mut alive = Box::pin(lock.keep_alive(secs(10)));
    drive_pending(&store, &mut alive, "keep-alive").await;
    engine.advance(&store, secs(10)).await;
    let renewed_to = renewed(&store, &mut alive, "job", first).await;
    // The work, running beside the keep-alive, reads the very lease it is guarded by.
    assert!(lock.is_held().await.unwrap());
    assert_eq!(
        lock.deadline(),
        renewed_to,
        "the handle follows the renewal"
    );
    assert_eq!(lock.info().deadline(), renewed_to);
    assert_eq!(
        holder_of(&store, "job").await,
        Some(("a".into(), lock.token()))
    );
    drop(alive);
}

/// A `force_release` ends a pending `keep_alive` and `lapsed` of the old holder with
/// `Expired`, before the deadline, without time moving.
pub async fn force_release_ends_keep_alive_and_lapsed<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let lock = grant(&store, "job", "a", secs(30)).await;
    let mut alive = Box::pin(lock.keep_alive(secs(10)));
    let mut lapsed = Box::pin(lock.lapsed());
    drive_pending(&store, &mut alive, "keep-alive").await;
    drive_pending(&store, &mut lapsed, "lapsed").await;
    store.force_release("job").await.unwrap().expect("held");
    let ended = eventually(&store, &mut alive, "keep-alive after a force-release").await;
    let why = eventually(&store, &mut lapsed, "lapsed after a force-release").await;
    for err in [ended, why] {
        match err {
            LockError::Expired {
                name,
                deadline,
                now,
                ..
            } => {
                assert_eq!(name, "job");
                assert!(
                    now < deadline,
                    "ended before its deadline: {now:?} {deadline:?}"
                );
            }
            other => panic!("expected Expired, got {other:?}"),
        }
    }
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
        let why = eventually(&store, &mut lapsed, "lapsed at the deadline").await;
        match why {
            LockError::Expired {
                name, token, ttl, ..
            } => {
                assert_eq!((name.as_str(), token, ttl), ("job", lock.token(), secs(10)));
            }
            other => panic!("expected Expired, got {other:?}"),
        }
    }
    assert!(!lock.is_held().await.unwrap());
}

/// `lapsed` on a lease that already lapsed resolves without time moving.
pub async fn lapsed_resolves_at_once_for_a_lapsed_lease<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let lock = grant(&store, "job", "a", secs(10)).await;
    engine.advance(&store, secs(20)).await;
    let mut lapsed = Box::pin(lock.lapsed());
    let why = eventually(&store, &mut lapsed, "lapsed on a lapsed lease").await;
    assert!(matches!(why, LockError::Expired { .. }), "{why:?}");
}
