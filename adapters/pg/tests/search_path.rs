//! A hostile `search_path` changes no answer (issue 20): the engine's functions run with
//! `search_path = pg_catalog, pg_temp`, call PostgreSQL's functions `pg_catalog.`-qualified,
//! and its sessions pin the same path, so neither a `public.nextval(text)` (which a bare
//! `nextval('"s".tokens')` resolves to before `pg_catalog.nextval(regclass)`) nor a role's
//! `search_path = evil, pg_catalog` with an `evil.clock_timestamp()` a day ahead hands out a
//! token twice or a name to two holders.

mod common;

use std::time::Duration;

use alkstore_pg::{PgConfig, PgLocks};

/// A database of this test's own (its `public` schema is where the attacker's functions go,
/// so no other test's session sees them): its URL, and an admin client on it.
async fn own_database() -> (String, tokio_postgres::Client) {
    let admin = common::client(&common::url()).await;
    let db = common::fresh_schema().to_lowercase().replace('-', "_");
    admin
        .batch_execute(&format!("CREATE DATABASE {db}"))
        .await
        .unwrap();
    let base = common::url();
    let (root, _) = base.rsplit_once('/').unwrap();
    let url = format!("{root}/{db}");
    let client = common::client(&url).await;
    (url, client)
}

fn config() -> PgConfig {
    PgConfig::new()
        .with_schema(common::fresh_schema())
        .with_io_timeout(Duration::from_secs(10))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_nextval_does_not_reuse_tokens() {
    let (url, admin) = own_database().await;
    admin
        .batch_execute(
            "GRANT CREATE ON SCHEMA public TO PUBLIC;
             CREATE FUNCTION public.nextval(text) RETURNS bigint LANGUAGE sql
               AS $$ SELECT 7::bigint $$;",
        )
        .await
        .unwrap();
    let locks = PgLocks::connect_with(&url, config()).await.unwrap();
    let ttl = Duration::from_secs(30);
    let mut tokens = Vec::new();
    for name in ["sp/a", "sp/b"] {
        // The fast path (a free name's first grant is the function's, a later one the
        // prepared statement's) and the waiting acquire: each takes a token.
        let lock = locks.try_lock(name, "o", ttl).await.unwrap().unwrap();
        tokens.push(lock.token());
        assert!(lock.release().await.unwrap());
        let lock = locks.try_lock(name, "o", ttl).await.unwrap().unwrap();
        tokens.push(lock.token());
        assert!(lock.release().await.unwrap());
        let lock = locks.acquire(name, "o", ttl).await.unwrap().unwrap();
        tokens.push(lock.token());
        assert!(lock.release().await.unwrap());
    }
    println!("tokens: {tokens:?}");
    for pair in tokens.windows(2) {
        assert!(pair[0] < pair[1], "tokens not increasing: {tokens:?}");
    }
    // A lapsed lease's token is refused by fence() once the name went to someone else.
    let old = locks
        .try_lock("sp/c", "old", Duration::from_millis(300))
        .await
        .unwrap()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let new = locks.try_lock("sp/c", "new", ttl).await.unwrap().unwrap();
    assert!(new.token() > old.token(), "{} {}", new.token(), old.token());
    let mut client = common::client(&url).await;
    let tx = client.transaction().await.unwrap();
    assert!(
        old.fence(&tx).await.is_err(),
        "a stale token passed fence()"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_search_path_does_not_shadow_the_clock() {
    let (url, admin) = own_database().await;
    let role = common::fresh_schema().to_lowercase().replace('-', "_");
    admin
        .batch_execute(&format!(
            "CREATE SCHEMA evil;
             CREATE FUNCTION evil.clock_timestamp() RETURNS timestamptz LANGUAGE sql
               AS $$ SELECT pg_catalog.clock_timestamp() + interval '1 day' $$;
             CREATE ROLE {role} LOGIN SUPERUSER;
             ALTER ROLE {role} SET search_path = evil, pg_catalog, public;"
        ))
        .await
        .unwrap();
    let evil_url = url.replacen("postgres@", &format!("{role}@"), 1);
    let config = config();
    let a = PgLocks::connect_with(&url, config.clone()).await.unwrap();
    let b = PgLocks::connect_with(&evil_url, config).await.unwrap();
    let ttl = Duration::from_secs(30);
    let held = a.try_lock("sp/x", "a", ttl).await.unwrap().unwrap();
    // Both the function (first grant of a name) and the prepared fast path are asked.
    assert!(b.try_lock("sp/x", "b", ttl).await.unwrap().is_none());
    assert!(b.try_lock("sp/x", "b", ttl).await.unwrap().is_none());
    assert!(held.is_held().await.unwrap(), "a's lease was taken");
    let other = b.try_lock("sp/y", "b", ttl).await.unwrap().unwrap();
    let again = b.try_lock("sp/y", "b", ttl).await.unwrap();
    assert!(again.is_none());
    assert!(other.release().await.unwrap());
    // The floor did not move a day ahead: a 30 s lease granted now by a is live.
    let later = a.try_lock("sp/y", "a", ttl).await.unwrap().unwrap();
    assert!(later.is_held().await.unwrap());
    assert!(held.release().await.unwrap());
    assert!(later.release().await.unwrap());
}
