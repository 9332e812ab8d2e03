//! Waiting: FIFO with direct hand-off, no barging, grants at a lapse, bounded waits that
//! elapse with `Ok(None)`, and cancellation by dropping the future.

use core::time::Duration;

use alkstore_mem::{AcquireFuture, LockHandle, LockStore};
use futures_lite::future::zip;

use super::{busy, grant, holder_of, open};
use crate::engine::Engine;
use crate::support::{drive_pending, eventually, queue, secs, settle};

/// `acquire` on a free name is granted without waiting.
pub async fn acquire_on_a_free_name_is_granted_at_once<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let lock = store
        .acquire("job", "a", secs(10))
        .timeout(secs(10))
        .await
        .unwrap()
        .expect("a free name is granted");
    assert_eq!(
        (lock.name(), lock.owner(), lock.ttl()),
        ("job", "a", secs(10))
    );
    assert_eq!(
        holder_of(&store, "job").await,
        Some(("a".into(), lock.token()))
    );
}

/// `timeout(ZERO)` answers as `try_lock` does: granted when free, `Ok(None)` when busy,
/// and it leaves nothing queued.
pub async fn zero_wait_behaves_exactly_like_try_lock<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let holder = store
        .acquire("job", "a", secs(10))
        .timeout(Duration::ZERO)
        .await
        .unwrap()
        .expect("free");
    let refused = store
        .acquire("job", "b", secs(10))
        .timeout(Duration::ZERO)
        .await
        .unwrap();
    assert!(refused.is_none(), "busy, and no wait allowed");
    assert!(holder.release().await.unwrap());
    // Had "b" been queued, the release would have handed it the lease.
    assert_eq!(holder_of(&store, "job").await, None, "nothing was queued");
    let again = store
        .acquire("job", "b", secs(10))
        .timeout(Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(again.map(|l| l.owner().to_owned()).as_deref(), Some("b"));
}

/// An unbounded `acquire` waits for as long as it takes, and a release hands it the lease.
pub async fn unbounded_acquire_waits_for_the_release<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let holder = grant(&store, "job", "a", secs(10)).await;
    let token = holder.token();
    let (granted, released) = zip(store.acquire("job", "b", secs(30)), async {
        for _ in 0..3 {
            settle(&store).await;
        }
        holder.release().await
    })
    .await;
    assert!(released.unwrap());
    let lock = granted
        .unwrap()
        .expect("an unbounded wait ends only with a grant");
    assert_eq!((lock.owner(), lock.ttl()), ("b", secs(30)));
    assert!(lock.token() > token);
}

/// A release hands the lease straight to the waiter, with a new token and the waiter's ttl.
pub async fn release_hands_the_lease_to_the_waiter<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let holder = grant(&store, "job", "a", secs(100)).await;
    let token = holder.token();
    let mut waiter = queue(&store, "job", "b", secs(30), secs(50)).await;
    engine.advance(&store, secs(10)).await;
    drive_pending(&store, &mut waiter, "waiter while the lease is held").await;
    assert!(holder.release().await.unwrap());
    let lock = eventually(&store, &mut waiter, "waiter after the release")
        .await
        .unwrap()
        .expect("handed the lease");
    assert_eq!((lock.owner(), lock.ttl()), ("b", secs(30)));
    assert!(lock.token() > token, "a new token for the new grant");
    assert_eq!(
        holder_of(&store, "job").await,
        Some(("b".into(), lock.token()))
    );
}

/// When the holder's lease lapses, the head waiter takes it (after, not before).
pub async fn waiter_takes_the_lease_when_it_lapses<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let holder = grant(&store, "job", "a", secs(10)).await;
    let token = holder.token();
    holder.detach();
    let mut waiter = queue(&store, "job", "b", secs(10), secs(100)).await;
    engine.advance(&store, secs(5)).await;
    drive_pending(&store, &mut waiter, "waiter before the lapse").await;
    engine.advance(&store, secs(5)).await;
    let lock = eventually(&store, &mut waiter, "waiter after the lapse")
        .await
        .unwrap()
        .expect("granted at the lapse");
    assert_eq!(lock.owner(), "b");
    assert!(lock.token() > token);
}

/// A bounded wait that elapses resolves to `Ok(None)` and leaves the queue: the holder
/// keeps its lease, and its release hands nothing to the timed-out waiter.
pub async fn wait_that_elapses_gives_none_and_leaves_the_queue<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let holder = grant(&store, "job", "a", secs(100)).await;
    let mut waiter = queue(&store, "job", "b", secs(10), secs(10)).await;
    engine.advance(&store, secs(5)).await;
    drive_pending(&store, &mut waiter, "waiter before its wait elapsed").await;
    engine.advance(&store, secs(5)).await;
    let outcome = eventually(&store, &mut waiter, "waiter after its wait elapsed").await;
    assert!(outcome.unwrap().is_none(), "an elapsed wait is Ok(None)");
    drop(waiter);
    assert!(holder.is_held().await.unwrap());
    assert!(holder.release().await.unwrap());
    assert_eq!(holder_of(&store, "job").await, None, "nobody was handed it");
}

/// Several waiters are served in arrival order, one release at a time; the others keep
/// waiting.
pub async fn waiters_are_served_in_arrival_order<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let mut current = grant(&store, "job", "holder", secs(100)).await;
    let mut waiters = Vec::new();
    for i in 0..4 {
        waiters.push(queue(&store, "job", &format!("w{i}"), secs(100), secs(1000)).await);
    }
    let mut last = current.token();
    for i in 0..4 {
        assert!(current.release().await.unwrap());
        let (head, rest) = waiters[i..].split_first_mut().unwrap();
        let lock = eventually(&store, head, &format!("w{i} after the release"))
            .await
            .unwrap()
            .expect("next in line");
        assert_eq!(lock.owner(), format!("w{i}"), "served out of order");
        assert!(lock.token() > last);
        last = lock.token();
        for (j, later) in rest.iter_mut().enumerate() {
            drive_pending(&store, later, &format!("w{} while w{i} holds", i + 1 + j)).await;
        }
        current = lock;
    }
    assert!(current.release().await.unwrap());
    assert_eq!(holder_of(&store, "job").await, None);
}

/// After a release with waiters queued, the lease is already the head waiter's: neither
/// `try_lock` nor a zero-wait `acquire` can barge in, even before the waiter is polled.
pub async fn try_lock_cannot_barge_after_a_release<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let holder = grant(&store, "job", "a", secs(10)).await;
    let mut waiter = queue(&store, "job", "b", secs(10), secs(100)).await;
    assert!(holder.release().await.unwrap());
    assert!(busy(&store, "job", "c").await, "try_lock barged in");
    let zero = store
        .acquire("job", "c", secs(10))
        .timeout(Duration::ZERO)
        .await
        .unwrap();
    assert!(zero.is_none(), "a zero-wait acquire barged in");
    let lock = eventually(&store, &mut waiter, "waiter after the release")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lock.owner(), "b");
}

/// After a lapse with waiters queued, the lease is the head waiter's too.
pub async fn try_lock_cannot_barge_after_a_lapse<E: Engine>(engine: &E) {
    let store = open(engine).await;
    grant(&store, "job", "a", secs(10)).await.detach();
    let mut waiter = queue(&store, "job", "b", secs(10), secs(100)).await;
    engine.advance(&store, secs(10)).await;
    assert!(
        busy(&store, "job", "c").await,
        "try_lock barged in after the lapse"
    );
    let lock = eventually(&store, &mut waiter, "waiter after the lapse")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lock.owner(), "b");
    assert_eq!(
        holder_of(&store, "job").await,
        Some(("b".into(), lock.token()))
    );
}

/// A waiter arriving after a hand-off queues behind the new holder, like everyone else.
pub async fn newcomers_queue_behind_existing_waiters<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let holder = grant(&store, "job", "a", secs(10)).await;
    let mut first = queue(&store, "job", "b", secs(10), secs(100)).await;
    assert!(holder.release().await.unwrap());
    let mut second = queue(&store, "job", "c", secs(10), secs(100)).await;
    let lock_b = eventually(&store, &mut first, "first waiter")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lock_b.owner(), "b");
    drive_pending(&store, &mut second, "second waiter while b holds").await;
    assert!(lock_b.release().await.unwrap());
    let lock_c = eventually(&store, &mut second, "second waiter")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lock_c.owner(), "c");
}

/// Dropping a queued waiter withdraws it: the next release goes to the waiter behind it.
pub async fn a_dropped_waiter_leaves_the_queue<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let holder = grant(&store, "job", "a", secs(10)).await;
    let first = queue(&store, "job", "b", secs(10), secs(100)).await;
    let mut second = queue(&store, "job", "c", secs(10), secs(100)).await;
    drop(first);
    settle(&store).await;
    drive_pending(&store, &mut second, "second waiter while a holds").await;
    assert!(holder.release().await.unwrap());
    let lock = eventually(&store, &mut second, "second waiter")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lock.owner(), "c");
    assert_eq!(
        holder_of(&store, "job").await,
        Some(("c".into(), lock.token()))
    );
}

/// A lease handed to a waiter that is dropped before it sees it passes on to the next
/// waiter, with a larger token.
pub async fn a_lease_handed_to_a_dropped_waiter_passes_on<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let holder = grant(&store, "job", "a", secs(10)).await;
    let token = holder.token();
    let first = queue(&store, "job", "b", secs(10), secs(100)).await;
    let mut second = queue(&store, "job", "c", secs(10), secs(100)).await;
    assert!(holder.release().await.unwrap());
    drop(first); // handed the lease, never polled again
    let lock = eventually(&store, &mut second, "second waiter")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lock.owner(), "c");
    assert!(lock.token() > token);
}

/// When the only waiter is dropped after the hand-off, the name is free again.
pub async fn a_lease_handed_to_the_last_dropped_waiter_frees_the_name<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let holder = grant(&store, "job", "a", secs(10)).await;
    let only = queue(&store, "job", "b", secs(10), secs(100)).await;
    assert!(holder.release().await.unwrap());
    drop(only);
    let mut next = Box::pin(store.acquire("job", "c", secs(10)).timeout(secs(10)));
    let lock = eventually(&store, &mut next, "acquire after the dropped hand-off")
        .await
        .unwrap()
        .expect("the dropped waiter's lease was freed");
    assert_eq!(lock.owner(), "c");
}

/// When the head waiter's wait elapses, the next waiter becomes head and takes the lease at
/// the holder's lapse.
pub async fn when_the_head_times_out_the_next_waiter_follows_the_holder<E: Engine>(engine: &E) {
    let store = open(engine).await;
    grant(&store, "job", "a", secs(30)).await.detach();
    let mut head = queue(&store, "job", "b", secs(10), secs(10)).await;
    let mut next = queue(&store, "job", "c", secs(10), secs(100)).await;
    engine.advance(&store, secs(10)).await;
    let outcome = eventually(&store, &mut head, "head after its wait elapsed").await;
    assert!(outcome.unwrap().is_none());
    drop(head);
    drive_pending(&store, &mut next, "next waiter while a holds").await;
    engine.advance(&store, secs(20)).await;
    let lock = eventually(&store, &mut next, "next waiter at the lapse")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lock.owner(), "c");
}

/// Waiters on one name are not disturbed by releases of another.
pub async fn waiters_on_other_names_are_independent<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let a = grant(&store, "a", "x", secs(10)).await;
    let b = grant(&store, "b", "x", secs(10)).await;
    let mut on_a = queue(&store, "a", "y", secs(10), secs(100)).await;
    let mut on_b = queue(&store, "b", "y", secs(10), secs(100)).await;
    assert!(a.release().await.unwrap());
    let lock = eventually(&store, &mut on_a, "waiter on a")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((lock.name(), lock.owner()), ("a", "y"));
    drive_pending(&store, &mut on_b, "waiter on b").await;
    assert_eq!(holder_of(&store, "b").await, Some(("x".into(), b.token())));
}
