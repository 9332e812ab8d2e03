//! Issue-13 review: the never-back rule when the server's clock steps back (the test-clock
//! offset lowered, as an NTP step would move `clock_timestamp()`). The core's rule: "a lease
//! that was seen lapsed stays lapsed"; `PgLock::renew`'s docs: `Expired` ... "(it stays
//! lost)".

mod common;
mod r13;

use std::time::Duration;

use alkstore_mem::LockError;
use r13::{TTL, step_clock_back};

const TEN: Duration = Duration::from_secs(10);

/// A renewal refused with `Expired`, an `is_held` false and a `fence()` refused, then the
/// server's clock steps back 11 s: the same lease is live again, renews, and passes the
/// fence (a write the database refused a moment ago now commits).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_seen_lapsed_stays_lapsed_when_the_server_clock_steps_back() {
    let locks = common::store().await;
    let client = common::client(&common::url()).await;
    let mut lock = locks.try_lock("a", "o", TEN).await.unwrap().unwrap();
    let token = i64::try_from(lock.token()).unwrap();
    locks
        .advance_test_clock(TEN + Duration::from_secs(1))
        .await
        .unwrap();
    assert!(!lock.is_held().await.unwrap());
    assert!(matches!(lock.lapsed().await, LockError::Expired { .. }));
    assert!(matches!(
        lock.renew(TEN).await,
        Err(LockError::Expired { .. })
    ));
    assert!(
        client
            .execute(&locks.fence_sql(), &[&"a", &token])
            .await
            .is_err()
    );
    step_clock_back(&client, &locks, TEN + Duration::from_secs(1)).await;
    let held_again = lock.is_held().await.unwrap();
    let fenced_again = client
        .execute(&locks.fence_sql(), &[&"a", &token])
        .await
        .is_ok();
    let renewed_again = lock.renew(TEN).await.is_ok();
    assert!(
        !held_again && !fenced_again && !renewed_again,
        "after the step back: is_held {held_again}, fence passes {fenced_again}, renew \
         succeeds {renewed_again} (all should stay refused)"
    );
}

/// Per name vs schema-wide: lease "a" lapses, a later operation on "b" sees the server at
/// +20 s, then the clock steps back 15 s. A registry keeps one floor for all names (the
/// core's `LockRegistry`), so "a" stays lapsed; here only writes on "a" itself count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_floor_is_schema_wide_as_the_registrys() {
    let locks = common::store().await;
    let client = common::client(&common::url()).await;
    let a = locks.try_lock("a", "o", TEN).await.unwrap().unwrap();
    locks
        .advance_test_clock(Duration::from_secs(20))
        .await
        .unwrap();
    let b = locks.try_lock("b", "o", TTL).await.unwrap().unwrap();
    step_clock_back(&client, &locks, Duration::from_secs(15)).await;
    let info = locks.holder("a").await.unwrap();
    assert!(
        info.is_none() && !a.is_held().await.unwrap(),
        "\"a\" lapsed at +10 s, the schema saw +20 s, yet after a 15 s step back it is live: \
         {info:?}"
    );
    drop(b);
}

/// Sanity: on one name, a write raises the floor, and time does not go back there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_on_the_name_keeps_its_time_from_going_back() {
    let locks = common::store().await;
    let client = common::client(&common::url()).await;
    let old = locks.try_lock("w", "o", TEN).await.unwrap().unwrap();
    locks
        .advance_test_clock(Duration::from_secs(20))
        .await
        .unwrap();
    let new = locks.try_lock("w", "p", TEN).await.unwrap().unwrap();
    step_clock_back(&client, &locks, Duration::from_secs(15)).await;
    assert!(!old.is_held().await.unwrap());
    assert_eq!(
        locks.holder("w").await.unwrap().unwrap().token(),
        new.token()
    );
    assert!(locks.try_lock("w", "q", TEN).await.unwrap().is_none());
    // The new lease's 10 s count from the floor (+20 s), not from the stepped-back clock.
    step_clock_back(&client, &locks, Duration::from_secs(100)).await;
    assert!(new.is_held().await.unwrap());
    drop(old);
}
