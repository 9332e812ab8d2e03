//! Issue-13 review: what the operator's views and a refused fence leave behind. `snapshot()`
//! and `holder()` must agree on who holds a name; a `fence()` that refuses must not keep the
//! name from its next holder.

mod common;
mod r13;

use std::time::Duration;

use r13::{TTL, ms};

/// A release hands the lease to a waiter whose process then dies before picking it up (its
/// heartbeat lapses). `holder()` counts that hand-off as lapsed (nobody ever held it);
/// `snapshot()` still lists it as a live lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_and_holder_agree_on_a_hand_off_to_a_dead_waiter() {
    let locks = common::store().await;
    let client = common::client(&common::url()).await;
    let acquire = format!(
        "SELECT {}.acquire('h', 'dead', 60000000, 'dead-id', -1, -1, 300000)",
        r13::q(&locks)
    );
    let held = locks.try_lock("h", "a", TTL).await.unwrap().unwrap();
    client.execute(&acquire, &[]).await.unwrap(); // queued; silent from now on
    assert!(held.release().await.unwrap()); // handed to "dead"
    tokio::time::sleep(ms(500)).await; // its heartbeat (300 ms) lapses
    let snapshot = locks.snapshot().await.unwrap();
    let holder = locks.holder("h").await.unwrap();
    let listed: Vec<_> = snapshot.held.iter().filter(|l| l.name() == "h").collect();
    assert_eq!(
        listed.first().map(|l| l.owner()),
        holder.as_ref().map(|l| l.owner()),
        "snapshot lists {listed:?}, holder() says {holder:?}"
    );
}

/// A stale holder's fence() refused (its lease lapsed, nobody took the name yet) in a
/// transaction its client has not rolled back yet (a session left idle in an aborted
/// transaction): the refused fence took the row lock before it refused, so the next holder
/// is kept out until that transaction ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_fence_does_not_keep_the_next_holder_out() {
    let locks = common::store().await;
    let stale_client = common::client(&common::url()).await;
    let stale = locks
        .try_lock("f", "stale", ms(1000))
        .await
        .unwrap()
        .unwrap();
    locks
        .advance_test_clock(Duration::from_secs(2))
        .await
        .unwrap();
    stale_client.batch_execute("BEGIN").await.unwrap();
    let token = i64::try_from(stale.token()).unwrap();
    let refused = stale_client
        .execute(&locks.fence_sql(), &[&"f", &token])
        .await;
    assert!(refused.is_err(), "lapsed: refused");
    let next = locks.try_lock("f", "next", TTL).await.unwrap();
    stale_client.batch_execute("ROLLBACK").await.unwrap();
    assert!(
        next.is_some(),
        "the lease lapsed and its stale holder was refused, yet the name stays busy while \
         the refused transaction is open"
    );
    stale.detach();
}
