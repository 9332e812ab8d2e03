//! Exclusion: first wins, busy is a value, not reentrant, names are independent, `holder`.

use alkstore_mem::{LockHandle, LockStore};

use super::{busy, grant, holder_of, open};
use crate::engine::Engine;
use crate::support::secs;

/// The first `try_lock` on a free name is granted; a second, by anyone, gets `Ok(None)`.
pub async fn first_try_lock_wins_and_second_gets_none<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let a = grant(&store, "job", "a", secs(10)).await;
    assert_eq!((a.name(), a.owner(), a.ttl()), ("job", "a", secs(10)));
    assert!(busy(&store, "job", "b").await, "a busy lock is Ok(None)");
    assert_eq!(
        holder_of(&store, "job").await,
        Some(("a".into(), a.token()))
    );
    assert!(a.is_held().await.unwrap());
}

/// Locks are not reentrant: the holder asking again gets `Ok(None)` too.
pub async fn same_owner_asking_again_is_not_reentrant<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let a = grant(&store, "job", "a", secs(10)).await;
    assert!(busy(&store, "job", "a").await);
    assert_eq!(
        holder_of(&store, "job").await,
        Some(("a".into(), a.token()))
    );
}

/// Different names never block each other, even for one owner.
pub async fn distinct_names_are_independent<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let one = grant(&store, "one", "a", secs(10)).await;
    let two = grant(&store, "two", "a", secs(10)).await;
    assert_eq!(
        holder_of(&store, "one").await,
        Some(("a".into(), one.token()))
    );
    assert_eq!(
        holder_of(&store, "two").await,
        Some(("a".into(), two.token()))
    );
    assert!(one.release().await.unwrap());
    assert!(
        two.is_held().await.unwrap(),
        "releasing one freed the other"
    );
    assert_eq!(holder_of(&store, "one").await, None);
}

/// `holder` describes the live lease as its handle does; `Ok(None)` for a free name and for
/// a name no lease can have.
pub async fn holder_reports_the_live_lease<E: Engine>(engine: &E) {
    let store = open(engine).await;
    assert!(store.holder("job").await.unwrap().is_none(), "free");
    let lock = grant(&store, "job", "a", secs(10)).await;
    let info = store.holder("job").await.unwrap().expect("held");
    assert_eq!(info, lock.info());
    assert_eq!(
        (info.name(), info.owner(), info.token(), info.deadline()),
        ("job", "a", lock.token(), lock.deadline())
    );
    for invalid in ["", "a\nb", "alk:job"] {
        assert!(
            store.holder(invalid).await.unwrap().is_none(),
            "{invalid:?} is not a valid name: no lease can have it"
        );
    }
}

/// Any UTF-8 without control characters is a valid name.
pub async fn any_other_utf8_is_a_valid_name<E: Engine>(engine: &E) {
    let store = open(engine).await;
    for name in [
        "tenant-3/job/000123",
        "ключ",
        "鎖",
        "🚀 launch",
        " spaced ",
        "a:b/c?d#e",
        "alk",
        "x-alk:",
    ] {
        let lock = grant(&store, name, "a", secs(10)).await;
        assert_eq!(lock.name(), name);
        assert_eq!(
            holder_of(&store, name).await,
            Some(("a".into(), lock.token()))
        );
        lock.detach();
    }
}
