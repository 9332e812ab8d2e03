//! `fence()` called first in a user's REPEATABLE READ or SERIALIZABLE transaction is not
//! failed (40001) by waiters arriving meanwhile (issue 20): a waiter that queues writes no
//! lease row (whether a name has waiters is the queue's to say, not a column of the row), so
//! the row the fence locks has no newer version its snapshot cannot see. The waiter's step is
//! held open (slow) while the fence runs, which made the failure deterministic: for the first
//! waiter of a name (which set the row's `waiting` flag up to schema version 3) and for one
//! queuing behind others.

mod common;

use std::time::Duration;

use alkstore_pg::{PgLock, PgLocks};
use tokio_postgres::{Client, IsolationLevel, Transaction};

const TTL: Duration = Duration::from_secs(30);

/// A waiter's step on `name`, `acquire($1, <args>)` in a transaction of `client` that is
/// left open (slow); asserted queued.
async fn open_step<'a>(client: &'a mut Client, q: &str, name: &str, args: &str) -> Transaction<'a> {
    let step = client.transaction().await.unwrap();
    let reply: Vec<i64> = step
        .query_one(&format!("SELECT {q}.acquire($1, {args})"), &[&name])
        .await
        .unwrap()
        .get(0);
    assert_eq!(reply[0], 0, "queued: {reply:?}");
    step
}

/// The round both tests run: `lock`'s `fence()` first in a user's transaction at `level`,
/// while `step` stays open 300 ms more; then `step` commits. The fence's transaction's
/// outcome.
async fn fence_beside_open_step(
    locks: &PgLocks,
    lock: &PgLock,
    level: IsolationLevel,
    step: Transaction<'_>,
) -> Result<(), tokio_postgres::Error> {
    let fenced = tokio::spawn({
        let token = i64::try_from(lock.token()).unwrap();
        let (sql, url, name) = (locks.fence_sql(), common::url(), lock.name().to_owned());
        async move {
            let mut user = common::client(&url).await;
            let tx = user
                .build_transaction()
                .isolation_level(level)
                .start()
                .await?;
            tx.execute(&sql, &[&name, &token]).await?;
            tx.commit().await
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    step.commit().await.unwrap();
    fenced.await.unwrap()
}

async fn fence_while_a_slow_waiter_queues(level: IsolationLevel) {
    let locks = common::store().await;
    let url = common::url();
    let q = format!("\"{}\"", locks.config().schema());
    let name = "fence/iso";
    let lock = locks.try_lock(name, "holder", TTL).await.unwrap().unwrap();
    // A first waiter queues through the store (the name now has waiters).
    let first = tokio::spawn({
        let locks = locks.clone();
        async move { locks.acquire(name, "first", TTL).await }
    });
    for _ in 0..500 {
        if !locks.snapshot().await.unwrap().waiting.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(locks.snapshot().await.unwrap().waiting.len(), 1);

    for round in 0..3 {
        // A second waiter's step, slow: its transaction stays open while the fence runs.
        let mut slow = common::client(&url).await;
        let id = format!("slow-waiter-{round}");
        let args = format!("'slow', 30000000, '{id}', -1, -1, 30000000");
        let step = open_step(&mut slow, &q, name, &args).await;
        let result = fence_beside_open_step(&locks, &lock, level, step).await;
        assert!(
            result.is_ok(),
            "{level:?} round {round}: fence() failed while a waiter queued: {result:?}"
        );
        let withdraw = format!("SELECT {q}.cancel($1, $2, false)");
        slow.execute(&withdraw, &[&name, &id]).await.unwrap();
    }
    assert!(lock.release().await.unwrap());
    let next = first.await.unwrap().unwrap().unwrap();
    assert!(next.release().await.unwrap());
    drop::<PgLocks>(locks);
}

/// The first waiter of a name queues in a transaction held open while the holder's fence()
/// runs first at `level` (the app reviewer's repro: 78 of 200 failed with 40001).
async fn fence_while_the_first_waiter_queues(level: IsolationLevel) {
    let locks = common::store().await;
    let url = common::url();
    let q = format!("\"{}\"", locks.config().schema());
    let name = "fence/first";
    let lock = locks.try_lock(name, "holder", TTL).await.unwrap().unwrap();
    let mut slow = common::client(&url).await;
    let args = "'w', 30000000, 'first-w', 5000000, -1, 30000000";
    let step = open_step(&mut slow, &q, name, args).await;
    let result = fence_beside_open_step(&locks, &lock, level, step).await;
    assert!(
        result.is_ok(),
        "{level:?}: fence() failed while the first waiter queued: {result:?}"
    );
    // The waiter is queued all the same: the release hands the name to it.
    assert!(lock.release().await.unwrap());
    let holder = locks.holder(name).await.unwrap();
    assert_eq!(holder.map(|h| h.owner().to_owned()), Some("w".to_owned()));
    slow.execute(
        &format!("SELECT {q}.cancel($1, 'first-w', false)"),
        &[&name],
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeatable_read_fence_is_not_failed_by_the_first_waiter() {
    fence_while_the_first_waiter_queues(IsolationLevel::RepeatableRead).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serializable_fence_is_not_failed_by_the_first_waiter() {
    fence_while_the_first_waiter_queues(IsolationLevel::Serializable).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeatable_read_fence_is_not_failed_by_arriving_waiters() {
    fence_while_a_slow_waiter_queues(IsolationLevel::RepeatableRead).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serializable_fence_is_not_failed_by_arriving_waiters() {
    fence_while_a_slow_waiter_queues(IsolationLevel::Serializable).await;
}
