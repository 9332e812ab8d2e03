//! Schema versions: a schema of version 1 (the pre-release builds of 0.3: no digest keys for
//! long names, no clock floor, no marks of withdrawn waiters, other functions), 2 (version
//! 3's tables, older functions) or 3 (functions without a fixed `search_path`) is upgraded to
//! version 4 in place when a store connects, its leases and waiters kept.
//!
//! The version 1 schema is made from a version 2 one by undoing what `002_tables.sql` does,
//! dropping every function, and leaving a function of version 1's signature behind.

mod common;

use std::time::Duration;

use alkstore_pg::{PgConfig, PgLock, PgLocks};
use tokio_postgres::Client;

const TTL: Duration = Duration::from_secs(30);

/// Undoes version 2 on `schema`: none of version 2's columns, objects or functions, a stale
/// function of version 1 (`cancel(text, text)`).
fn back_to_version_1(q: &str) -> String {
    format!(
        "DO $d$ DECLARE f regprocedure;
         BEGIN
           FOR f IN SELECT oid::regprocedure FROM pg_proc
                     WHERE pronamespace = to_regnamespace('{q}')
           LOOP EXECUTE 'DROP FUNCTION ' || f; END LOOP;
         END $d$;
         DROP TABLE {q}.cancelled;
         DROP SEQUENCE {q}.floor;
         ALTER TABLE {q}.leases DROP COLUMN long_name;
         ALTER TABLE {q}.waiters DROP COLUMN long_name;
         CREATE FUNCTION {q}.cancel(p_name text, p_id text) RETURNS void
           LANGUAGE sql AS 'SELECT';"
    )
}

/// A store on `schema` of the shared cluster (installing or upgrading it).
async fn connect(schema: &str) -> PgLocks {
    PgLocks::connect_with(&common::url(), PgConfig::new().with_schema(schema))
        .await
        .unwrap()
}

/// A fresh schema at the current version, a lease on `held` taken there (its store
/// dropped), and a raw client: what each test downgrades.
async fn schema_with_a_lease() -> (String, String, PgLock, Client) {
    let schema = common::fresh_schema();
    let q = format!("\"{schema}\"");
    let first = connect(&schema).await;
    let held = first.try_lock("held", "a", TTL).await.unwrap().unwrap();
    drop(first);
    (schema, q, held, common::client(&common::url()).await)
}

/// Runs `undo` on the schema `q`, then records it as `version`.
async fn downgrade(client: &Client, q: &str, undo: &str, version: i32) {
    client
        .batch_execute(&format!("{undo}\nUPDATE {q}.meta SET version = {version};"))
        .await
        .unwrap();
}

/// The schema's version, as its `meta` table records it.
async fn version(client: &Client, q: &str) -> i32 {
    client
        .query_one(&format!("SELECT version FROM {q}.meta"), &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_schema_is_upgraded_in_place_with_its_rows() {
    let url = common::url();
    let (schema, q, held, client) = schema_with_a_lease().await;
    let token = held.token();
    held.detach();
    // A waiter of another process, queued behind it (alive for a minute).
    let queued: Vec<i64> = client
        .query_one(
            &format!("SELECT {q}.acquire('held', 'w', 30000000, 'w-id', -1, -1, 60000000)"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(queued[0], 0, "queued: {queued:?}");
    downgrade(&client, &q, &back_to_version_1(&q), 1).await;

    // Four stores connect at once: one upgrades, the others wait for it and find version 4.
    let connects: Vec<_> = (0..4)
        .map(|_| {
            let (url, schema) = (url.clone(), schema.clone());
            tokio::spawn(async move {
                PgLocks::connect_with(&url, PgConfig::new().with_schema(schema)).await
            })
        })
        .collect();
    let mut stores = Vec::new();
    for c in connects {
        stores.push(c.await.unwrap().expect("every connect succeeds"));
    }
    let locks = &stores[0];
    assert_eq!(version(&client, &q).await, 4);
    let stale: bool = client
        .query_one(
            &format!("SELECT to_regprocedure('{q}.cancel(text,text)') IS NULL"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(stale, "version 1's functions are dropped");

    // The lease and the queue of version 1 are kept, and work on.
    let lease = locks.holder("held").await.unwrap().unwrap();
    assert_eq!((lease.owner(), lease.token()), ("a", token));
    assert!(
        stores[1]
            .try_lock("held", "b", TTL)
            .await
            .unwrap()
            .is_none()
    );
    let waiting = locks.snapshot().await.unwrap().waiting;
    assert_eq!(waiting.len(), 1);
    assert_eq!((waiting[0].name(), waiting[0].owner()), ("held", "w"));
    let token_param = i64::try_from(token).unwrap();
    client
        .execute(&locks.fence_sql(), &[&"held", &token_param])
        .await
        .unwrap();
    let ended = locks.force_release("held").await.unwrap().unwrap();
    assert_eq!(ended.token(), token);
    let next = locks.holder("held").await.unwrap().unwrap();
    assert!(next.owner() == "w" && next.token() > token, "{next:?}");

    // Version 2's own: a name far above the btree's limit.
    let long: String = (0..2000u32)
        .map(|i| char::from_u32(0x4E00 + (i.wrapping_mul(7919) % 20000)).unwrap())
        .collect();
    let long_store = PgLocks::connect_with(
        &url,
        PgConfig::new().with_schema(&schema).with_max_name_len(8192),
    )
    .await
    .unwrap();
    let lock = long_store.try_lock(&long, "o", TTL).await.unwrap().unwrap();
    assert!(lock.token() > next.token());
    assert!(lock.release().await.unwrap());
}

/// Version 2 (the tables of version 3, functions that rewrote the lease row for every waiter)
/// gets version 4's functions, its rows kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_2_schema_gets_the_new_functions() {
    let (schema, q, lock, client) = schema_with_a_lease().await;
    // Version 2's acquire() wrote `waiting = true` whether or not it was set; version 4's
    // writes nothing on the lease row when a waiter queues.
    let body = "SELECT pg_get_functiondef(p.oid) LIKE '%pg_catalog.nextval%' FROM pg_proc p \
                WHERE p.pronamespace = to_regnamespace($1) AND p.proname = 'acquire'";
    let is_new: bool = client.query_one(body, &[&q]).await.unwrap().get(0);
    assert!(is_new);
    let old_acquire = format!(
        "CREATE OR REPLACE FUNCTION {q}.acquire(p_name text, p_owner text, p_ttl bigint, \
           p_id text, p_wait bigint, p_wd bigint, p_hb bigint) RETURNS bigint[] \
           LANGUAGE sql AS 'SELECT ARRAY[2, 0, 0, 0]::bigint[]';"
    );
    downgrade(&client, &q, &old_acquire, 2).await;
    let is_new: bool = client.query_one(body, &[&q]).await.unwrap().get(0);
    assert!(!is_new);
    let locks = connect(&schema).await;
    assert_eq!(version(&client, &q).await, 4);
    let is_new: bool = client.query_one(body, &[&q]).await.unwrap().get(0);
    assert!(is_new, "version 4's acquire() is installed");
    assert_eq!(
        locks.holder("held").await.unwrap().unwrap().token(),
        lock.token()
    );
    assert!(lock.release().await.unwrap());
}

/// Version 3 (the tables of version 4, functions that resolved `nextval` and
/// `clock_timestamp` through the caller's `search_path`) gets version 4's functions, each with
/// `search_path = pg_catalog, pg_temp`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_3_schema_gets_functions_with_a_fixed_search_path() {
    let (schema, q, lock, client) = schema_with_a_lease().await;
    let unpinned = "SELECT count(*) FROM pg_proc p WHERE p.pronamespace = to_regnamespace($1) \
                    AND p.proname <> '_k' \
                    AND NOT coalesce(p.proconfig, '{}') @> '{\"search_path=pg_catalog, pg_temp\"}'";
    let count: i64 = client.query_one(unpinned, &[&q]).await.unwrap().get(0);
    assert_eq!(count, 0);
    let unpin = format!("ALTER FUNCTION {q}.try_lock(text, text, bigint, text) RESET search_path;");
    downgrade(&client, &q, &unpin, 3).await;
    let count: i64 = client.query_one(unpinned, &[&q]).await.unwrap().get(0);
    assert_eq!(count, 1);
    let locks = connect(&schema).await;
    let count: i64 = client.query_one(unpinned, &[&q]).await.unwrap().get(0);
    assert_eq!(count, 0, "version 4's functions are installed");
    assert_eq!(version(&client, &q).await, 4);
    assert_eq!(
        locks.holder("held").await.unwrap().unwrap().token(),
        lock.token()
    );
    assert!(lock.release().await.unwrap());
}
