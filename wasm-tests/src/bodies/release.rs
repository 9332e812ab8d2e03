//! Release, lapse, detach and drop.

use alkstore_mem::{AcquireFuture, LockHandle, LockStore};

use super::{busy, grant, holder_of, open};
use crate::engine::Engine;
use crate::support::{eventually, secs};

/// A live lease is live while `now < deadline` and lapses silently at it: the name is free.
pub async fn lease_lapses_at_its_deadline<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let lock = grant(&store, "job", "a", secs(10)).await;
    engine.advance(&store, secs(5)).await;
    assert!(lock.is_held().await.unwrap());
    assert!(busy(&store, "job", "b").await);
    engine.advance(&store, secs(5)).await;
    assert!(!lock.is_held().await.unwrap());
    assert_eq!(holder_of(&store, "job").await, None, "lapse is silent");
    let next = grant(&store, "job", "b", secs(10)).await;
    assert!(next.token() > lock.token());
}

/// Releasing a live lease answers `true` and frees the name.
pub async fn release_frees_a_live_lease_and_reports_true<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let lock = grant(&store, "job", "a", secs(10)).await;
    assert!(lock.release().await.unwrap());
    assert_eq!(holder_of(&store, "job").await, None);
    grant(&store, "job", "b", secs(10)).await;
}

/// Releasing a lapsed lease answers `false`, not an error.
pub async fn release_after_lapse_is_false_not_an_error<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let lock = grant(&store, "job", "a", secs(10)).await;
    engine.advance(&store, secs(10)).await;
    assert!(!lock.release().await.unwrap());
}

/// A stale handle's release never frees a newer lease, the same owner's included.
pub async fn stale_release_never_frees_a_newer_lease<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let stale = grant(&store, "job", "a", secs(10)).await;
    engine.advance(&store, secs(20)).await;
    let fresh = grant(&store, "job", "a", secs(10)).await;
    assert!(!stale.release().await.unwrap());
    assert!(fresh.is_held().await.unwrap());
    assert_eq!(
        holder_of(&store, "job").await,
        Some(("a".into(), fresh.token()))
    );
}

/// Dropping a handle releases its lease: a following bounded `acquire` gets the name
/// without any time passing. (A remote engine may release in the background, so this
/// waits for the grant instead of asking `try_lock` at once.)
pub async fn dropping_a_lock_releases_it<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let lock = grant(&store, "job", "a", secs(100)).await;
    let token = lock.token();
    drop(lock);
    let mut next = Box::pin(store.acquire("job", "b", secs(10)).timeout(secs(10)));
    let next = eventually(&store, &mut next, "acquire after the holder was dropped")
        .await
        .unwrap()
        .expect("the dropped handle released the name");
    assert_eq!(next.owner(), "b");
    assert!(next.token() > token);
}

/// `detach` gives up the handle and leaves the lease to run to its deadline.
pub async fn detach_leaves_the_lease_to_lapse_at_its_deadline<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let lock = grant(&store, "job", "a", secs(10)).await;
    let token = lock.token();
    lock.detach();
    assert_eq!(holder_of(&store, "job").await, Some(("a".into(), token)));
    assert!(busy(&store, "job", "b").await);
    engine.advance(&store, secs(5)).await;
    assert_eq!(holder_of(&store, "job").await, Some(("a".into(), token)));
    engine.advance(&store, secs(5)).await;
    assert_eq!(holder_of(&store, "job").await, None);
    grant(&store, "job", "b", secs(10)).await;
}
