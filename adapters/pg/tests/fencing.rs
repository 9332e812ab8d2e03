//! Fencing inside the user's own transaction: `fence(name, token)` in the same database as
//! the guarded data. A live token's write commits; a stale token's errors (SQLSTATE 55F01,
//! naming the lock) and nothing commits; a transaction holding `fence()` past the ttl keeps a
//! competing `try_lock` out until it ends, and the next holder's token is larger.

mod common;

use std::time::Duration;

use alkstore_pg::{FENCE_SQLSTATE, PgLocks, is_fence_error};

const TTL: Duration = Duration::from_secs(30);

/// A store in a fresh schema, a client, and an `invoices` table in that schema.
async fn setup() -> (PgLocks, tokio_postgres::Client, String) {
    let locks = common::store().await;
    let client = common::client(&common::url()).await;
    let table = format!("\"{}\".invoices", locks.config().schema());
    client
        .batch_execute(&format!(
            "CREATE TABLE {table} (id int PRIMARY KEY, paid_by text, token bigint)"
        ))
        .await
        .unwrap();
    (locks, client, table)
}

async fn rows(client: &tokio_postgres::Client, table: &str) -> Vec<(String, i64)> {
    client
        .query(
            &format!("SELECT paid_by, token FROM {table} ORDER BY token"),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_tokens_write_commits() {
    let (locks, mut client, table) = setup().await;
    let lock = locks
        .try_lock("invoice/1001", "a", TTL)
        .await
        .unwrap()
        .unwrap();
    let tx = client.transaction().await.unwrap();
    lock.fence(&tx).await.unwrap();
    let token = i64::try_from(lock.token()).unwrap();
    tx.execute(
        &format!("INSERT INTO {table} VALUES (1001, 'a', $1)"),
        &[&token],
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(rows(&client, &table).await, vec![("a".into(), token)]);
    // Any client can call it by SQL, too.
    client
        .execute(&locks.fence_sql(), &[&"invoice/1001", &token])
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_tokens_write_errors_and_nothing_commits() {
    let (locks, mut client, table) = setup().await;
    let old = locks
        .try_lock("invoice/1001", "a", TTL)
        .await
        .unwrap()
        .unwrap();
    locks.advance_test_clock(TTL).await.unwrap();
    // Lapsed, nobody else yet: refused.
    let tx = client.transaction().await.unwrap();
    let err = old.fence(&tx).await.unwrap_err();
    assert!(is_fence_error(&err), "{err:?}");
    let db = err.as_db_error().unwrap();
    assert_eq!(db.code().code(), FENCE_SQLSTATE);
    assert!(db.message().contains("'invoice/1001'"), "{}", db.message());
    assert!(db.message().contains("lapsed"), "{}", db.message());
    // The transaction is aborted: the write cannot happen, and nothing commits.
    assert!(
        tx.execute(&format!("INSERT INTO {table} VALUES (1, 'a', 1)"), &[])
            .await
            .is_err()
    );
    drop(tx);
    // Taken over: the old token is refused, the new one passes.
    let new = locks
        .try_lock("invoice/1001", "b", TTL)
        .await
        .unwrap()
        .unwrap();
    let tx = client.transaction().await.unwrap();
    let err = old.fence(&tx).await.unwrap_err();
    assert!(is_fence_error(&err));
    assert!(
        err.as_db_error()
            .unwrap()
            .message()
            .contains("not held with fencing token")
    );
    tx.rollback().await.unwrap();
    let tx = client.transaction().await.unwrap();
    new.fence(&tx).await.unwrap();
    let token = i64::try_from(new.token()).unwrap();
    tx.execute(
        &format!("INSERT INTO {table} VALUES (1001, 'b', $1)"),
        &[&token],
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(rows(&client, &table).await, vec![("b".into(), token)]);
    // Released: refused too.
    assert!(new.release().await.unwrap());
    let err = client
        .execute(&locks.fence_sql(), &[&"invoice/1001", &token])
        .await
        .unwrap_err();
    assert!(is_fence_error(&err));
    drop(old);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_holding_fence_past_the_ttl_keeps_a_takeover_out_until_it_ends() {
    let (locks, mut client, table) = setup().await;
    let other = common::client(&common::url()).await;
    let lock = locks
        .try_lock("invoice/7", "slow", TTL)
        .await
        .unwrap()
        .unwrap();
    let tx = client.transaction().await.unwrap();
    lock.fence(&tx).await.unwrap();
    // The lease runs out while the guarded transaction is still open.
    locks.advance_test_clock(TTL * 2).await.unwrap();
    assert!(!lock.is_held().await.unwrap(), "lapsed on the clock");
    for _ in 0..3 {
        assert!(
            locks
                .try_lock("invoice/7", "rival", TTL)
                .await
                .unwrap()
                .is_none(),
            "kept out while the fenced transaction is open"
        );
    }
    // A waiter is kept out too, and gets the name once the transaction ends.
    let waiter = {
        let locks = locks.clone();
        tokio::spawn(async move { locks.acquire("invoice/7", "waiter", TTL).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished());
    let token = i64::try_from(lock.token()).unwrap();
    tx.execute(
        &format!("INSERT INTO {table} VALUES (7, 'slow', $1)"),
        &[&token],
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let next = tokio::time::timeout(Duration::from_secs(2), waiter)
        .await
        .expect("granted once the transaction ended")
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(next.token() > lock.token());
    assert_eq!(next.owner(), "waiter");
    assert_eq!(rows(&other, &table).await, vec![("slow".into(), token)]);
    assert!(
        locks
            .try_lock("invoice/7", "rival", TTL)
            .await
            .unwrap()
            .is_none()
    );
    drop(lock);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_holder_renews_while_its_fenced_transaction_is_open() {
    let (locks, mut client, _table) = setup().await;
    let mut lock = locks.try_lock("r", "a", TTL).await.unwrap().unwrap();
    let tx = client.transaction().await.unwrap();
    lock.fence(&tx).await.unwrap();
    let before = lock.deadline();
    tokio::time::timeout(Duration::from_secs(1), lock.renew(TTL * 2))
        .await
        .expect("a renewal does not wait for the fenced transaction")
        .unwrap();
    assert!(lock.deadline() > before);
    tx.commit().await.unwrap();
    assert!(lock.release().await.unwrap());
}
