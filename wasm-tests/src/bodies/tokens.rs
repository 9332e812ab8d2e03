//! Fencing tokens strictly increase across everything one store grants.

use alkstore_mem::{AcquireFuture, LockHandle, LockStore};

use super::{grant, holder_of, open};
use crate::engine::Engine;
use crate::support::{eventually, queue, secs};

/// Tokens strictly increase across names and rounds, and renewals keep them.
pub async fn fencing_tokens_strictly_increase_across_names_and_survive_renew<E: Engine>(
    engine: &E,
) {
    let store = open(engine).await;
    let mut last = 0;
    for round in 0..3 {
        for name in ["a", "b", "c"] {
            let mut lock = grant(&store, name, "w", secs(10)).await;
            assert!(
                lock.token() > last,
                "round {round} {name}: {} after {last}",
                lock.token()
            );
            last = lock.token();
            lock.renew(secs(10)).await.unwrap();
            assert_eq!(lock.token(), last, "renew keeps the token");
            assert_eq!(holder_of(&store, name).await, Some(("w".into(), last)));
            lock.detach();
        }
        engine.advance(&store, secs(10)).await;
    }
}

/// Grants by `acquire` (at once, by hand-off and at a lapse) take part in the same
/// sequence.
pub async fn fencing_tokens_increase_through_hand_offs<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let first = grant(&store, "job", "a", secs(10)).await;
    let first_token = first.token();
    let mut waiter = queue(&store, "job", "b", secs(10), secs(100)).await;
    assert!(first.release().await.unwrap());
    let second = eventually(&store, &mut waiter, "hand-off")
        .await
        .unwrap()
        .unwrap();
    assert!(second.token() > first_token);
    let other = grant(&store, "other", "x", secs(10)).await;
    assert!(other.token() > second.token());
    second.detach();
    let mut waiter = queue(&store, "job", "c", secs(10), secs(100)).await;
    engine.advance(&store, secs(10)).await;
    let third = eventually(&store, &mut waiter, "grant at the lapse")
        .await
        .unwrap()
        .unwrap();
    assert!(third.token() > other.token());
    let at_once = store
        .acquire("free", "d", secs(10))
        .timeout(secs(10))
        .await
        .unwrap()
        .unwrap();
    assert!(at_once.token() > third.token());
}
