//! The operator's view on every engine: `snapshot` and `force_release`.

use alkstore_mem::{LockHandle, LockStore, Waiting};

use super::{grant, holder_of, open};
use crate::engine::Engine;
use crate::support::{PATIENCE, eventually, queue, secs, settle};

/// `snapshot` lists every live lease, sorted by name, with owner, token and deadline, and
/// leaves out lapsed and released ones.
pub async fn snapshot_lists_the_live_leases_sorted_by_name<E: Engine>(engine: &E) {
    let store = open(engine).await;
    assert_eq!(
        store.snapshot().await.unwrap().held,
        Vec::new(),
        "a fresh store"
    );
    let b = grant(&store, "reports/b", "cron-2", secs(30)).await;
    let a = grant(&store, "reports/a", "cron-1", secs(60)).await;
    let gone = grant(&store, "reports/c", "cron-3", secs(10)).await;
    let released = grant(&store, "reports/d", "cron-4", secs(60)).await;
    assert!(released.release().await.unwrap());
    engine.advance(&store, secs(10)).await;
    let snapshot = store.snapshot().await.unwrap();
    assert_eq!(snapshot.held, vec![a.info(), b.info()]);
    assert!(snapshot.waiting.is_empty());
    assert!(!gone.is_held().await.unwrap());
}

/// `snapshot` lists the queued waiters of each name in the order they will be served.
pub async fn snapshot_lists_waiters_in_queue_order<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let holder = grant(&store, "job", "a", secs(60)).await;
    let first = queue(&store, "job", "b", secs(10), secs(1000)).await;
    let _second = queue(&store, "job", "c", secs(10), secs(1000)).await;
    let snapshot = store.snapshot().await.unwrap();
    assert_eq!(snapshot.held, vec![holder.info()]);
    assert_eq!(
        snapshot.waiting,
        vec![Waiting::new("job", "b"), Waiting::new("job", "c")]
    );
    // A dropped waiter leaves the queue (a remote engine's withdrawal takes a round trip).
    drop(first);
    for _ in 0..PATIENCE {
        if store.snapshot().await.unwrap().waiting == [Waiting::new("job", "c")] {
            return;
        }
        settle(&store).await;
    }
    panic!("the dropped waiter is still listed");
}

/// `force_release` ends the live lease whoever holds it and returns it; the old handle's
/// renew fails with `Expired` and its release answers `false`; the next grant's token is
/// larger.
pub async fn force_release_ends_the_lease_and_returns_it<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let mut stuck = grant(&store, "migration", "deploy-3", secs(3600)).await;
    let ended = store
        .force_release("migration")
        .await
        .unwrap()
        .expect("it was held");
    assert_eq!(ended, stuck.info());
    assert_eq!(holder_of(&store, "migration").await, None);
    assert!(!stuck.is_held().await.unwrap());
    assert!(matches!(
        stuck.renew(secs(60)).await,
        Err(alkstore_mem::LockError::Expired { .. })
    ));
    let next = grant(&store, "migration", "deploy-4", secs(60)).await;
    assert!(next.token() > stuck.token());
    assert!(
        !stuck.release().await.unwrap(),
        "a stale release touches nothing"
    );
    assert_eq!(
        holder_of(&store, "migration").await,
        Some(("deploy-4".into(), next.token()))
    );
}

/// `force_release` hands the name to the head waiter, with a larger token; the rest stay
/// queued in order.
pub async fn force_release_hands_the_lease_to_the_head_waiter<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let stuck = grant(&store, "job", "a", secs(3600)).await;
    let mut first = queue(&store, "job", "b", secs(10), secs(1000)).await;
    let _second = queue(&store, "job", "c", secs(10), secs(1000)).await;
    store.force_release("job").await.unwrap().expect("held");
    let lock = eventually(&store, &mut first, "the head waiter after a force-release")
        .await
        .unwrap()
        .expect("granted");
    assert_eq!(lock.owner(), "b");
    assert!(lock.token() > stuck.token());
    let snapshot = store.snapshot().await.unwrap();
    assert_eq!(snapshot.waiting, vec![Waiting::new("job", "c")]);
}

/// `force_release` of a free, lapsed, or invalid name answers `None` and changes nothing.
pub async fn force_release_of_a_free_or_invalid_name_is_none<E: Engine>(engine: &E) {
    let store = open(engine).await;
    assert_eq!(store.force_release("free").await.unwrap(), None);
    assert_eq!(store.force_release("").await.unwrap(), None);
    assert_eq!(store.force_release("alk:reserved").await.unwrap(), None);
    let lapsed = grant(&store, "lapsed", "a", secs(10)).await;
    engine.advance(&store, secs(10)).await;
    assert_eq!(store.force_release("lapsed").await.unwrap(), None);
    assert!(!lapsed.release().await.unwrap());
    let other = grant(&store, "other", "a", secs(10)).await;
    assert_eq!(store.force_release("free").await.unwrap(), None);
    assert!(other.is_held().await.unwrap(), "another name is untouched");
}
