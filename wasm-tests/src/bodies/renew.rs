//! Renew: an absolute reset to `now + ttl` that keeps the token, refused at or after the
//! deadline with `Expired` (and never reviving the lease).

use core::time::Duration;

use alkstore_mem::{LockError, LockHandle, LockStore, TtlProblem};

use super::{busy, grant, holder_of, open};
use crate::engine::Engine;
use crate::support::secs;

/// Renewing resets the deadline to `now + ttl`, later or earlier than before, keeps the
/// token, and updates the handle's `ttl`; the lease then lapses at its new deadline.
pub async fn renew_is_an_absolute_reset_even_when_earlier<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let mut lock = grant(&store, "job", "a", secs(100)).await;
    let token = lock.token();
    let first = lock.deadline();

    engine.advance(&store, secs(10)).await;
    lock.renew(secs(200)).await.unwrap();
    let later = lock.deadline();
    assert!(later > first, "now + 200 s is later than grant + 100 s");
    assert_eq!((lock.token(), lock.ttl()), (token, secs(200)));
    assert_eq!(
        store.holder("job").await.unwrap().unwrap().deadline(),
        later
    );

    lock.renew(secs(20)).await.unwrap();
    let earlier = lock.deadline();
    assert!(earlier < first, "now + 20 s is earlier than grant + 100 s");
    assert_eq!((lock.token(), lock.ttl()), (token, secs(20)));
    assert_eq!(
        store.holder("job").await.unwrap().unwrap().deadline(),
        earlier
    );

    engine.advance(&store, secs(10)).await;
    assert!(lock.is_held().await.unwrap(), "10 s into a 20 s lease");
    engine.advance(&store, secs(10)).await;
    assert!(
        !lock.is_held().await.unwrap(),
        "the shortened lease lapsed at its new deadline"
    );
    assert_eq!(holder_of(&store, "job").await, None);
}

/// A renew with a zero ttl is refused with `InvalidTtl` and changes nothing.
pub async fn renew_with_zero_ttl_is_refused_and_changes_nothing<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let mut lock = grant(&store, "job", "a", secs(10)).await;
    let deadline = lock.deadline();
    assert_eq!(
        lock.renew(Duration::ZERO).await,
        Err(LockError::InvalidTtl {
            ttl: Duration::ZERO,
            problem: TtlProblem::Zero,
        })
    );
    assert_eq!((lock.deadline(), lock.ttl()), (deadline, secs(10)));
    assert_eq!(
        store.holder("job").await.unwrap().unwrap().deadline(),
        deadline
    );
    engine.advance(&store, secs(5)).await;
    assert!(lock.is_held().await.unwrap());
}

/// At (or after) the deadline, renew is refused with `Expired` naming the lease; the lease
/// stays lapsed, and a second try is refused too.
pub async fn renew_at_the_deadline_is_refused_with_expired<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let mut lock = grant(&store, "job", "a", secs(10)).await;
    engine.advance(&store, secs(10)).await;
    match lock.renew(secs(10)).await {
        Err(LockError::Expired { name, token, .. }) => {
            assert_eq!((name.as_str(), token), ("job", lock.token()));
        }
        other => panic!("renew at the deadline: expected Expired, got {other:?}"),
    }
    assert!(!lock.is_held().await.unwrap());
    assert_eq!(holder_of(&store, "job").await, None, "not revived");
    assert!(matches!(
        lock.renew(secs(10)).await,
        Err(LockError::Expired { .. })
    ));
    assert!(!busy(&store, "job", "b").await, "the name is free");
}

/// A stale holder's renew after someone else took the name is refused and leaves the new
/// lease alone.
pub async fn renew_after_someone_else_took_the_name_is_refused<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let mut stale = grant(&store, "job", "a", secs(10)).await;
    engine.advance(&store, secs(15)).await;
    let fresh = grant(&store, "job", "b", secs(10)).await;
    assert!(matches!(
        stale.renew(secs(10)).await,
        Err(LockError::Expired { .. })
    ));
    assert_eq!(
        holder_of(&store, "job").await,
        Some(("b".into(), fresh.token()))
    );
    assert!(fresh.is_held().await.unwrap());
}
