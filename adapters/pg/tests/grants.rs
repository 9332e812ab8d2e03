//! Least privilege (issue 20), with real roles on the shared cluster: the schema installed by
//! an administrator (`alkstore_pg::install`), then used by an application role without DDL
//! rights, by a role that only writes guarded data (`fence()`), and by an operator, each with
//! exactly the grants the README lists under "Roles and grants" (`GRANTS_APP` and
//! `GRANTS_FENCE` below are those statements).

mod common;

use std::time::Duration;

use alkstore_pg::{FENCE_SQLSTATE, PgConfig, PgLocks, is_fence_error};

const TTL: Duration = Duration::from_secs(30);

/// The application's (and the operator's) grants, as the README gives them (plus the test
/// clock of test builds).
const GRANTS_APP: &str = "GRANT USAGE ON SCHEMA @s TO @r;
GRANT SELECT ON @s.meta TO @r;
GRANT SELECT, INSERT, UPDATE, DELETE ON @s.leases, @s.waiters, @s.cancelled TO @r;
GRANT USAGE, SELECT, UPDATE ON SEQUENCE @s.tokens, @s.arrivals, @s.floor TO @r;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA @s TO @r;
GRANT SELECT, UPDATE ON @s.test_clock TO @r;";

/// A role that only calls `fence()` before its writes.
const GRANTS_FENCE: &str = "GRANT USAGE ON SCHEMA @s TO @r;
GRANT EXECUTE ON FUNCTION @s.fence(text, bigint) TO @r;";

/// A new login role (no superuser, no CREATE on the database): its name and URL.
async fn role(admin: &tokio_postgres::Client) -> (String, String) {
    let name = common::fresh_schema().to_lowercase().replace('-', "_");
    admin
        .batch_execute(&format!("CREATE ROLE {name} LOGIN NOSUPERUSER"))
        .await
        .unwrap();
    let url = common::url().replacen("postgres@", &format!("{name}@"), 1);
    (name, url)
}

async fn grant(admin: &tokio_postgres::Client, grants: &str, schema: &str, role: &str) {
    let sql = grants
        .replace("@s", &format!("\"{schema}\""))
        .replace("@r", role);
    admin.batch_execute(&sql).await.unwrap();
}

/// The schema installed by the administrator (the cluster's superuser here).
async fn installed() -> (PgConfig, PgLocks) {
    let config = PgConfig::new()
        .with_schema(common::fresh_schema())
        .with_io_timeout(Duration::from_secs(10));
    alkstore_pg::install(&common::url(), config.clone())
        .await
        .unwrap();
    let admin = PgLocks::connect_with(&common::url(), config.clone())
        .await
        .unwrap();
    (config, admin)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_application_role_without_ddl_rights_uses_an_installed_schema() {
    let admin = common::client(&common::url()).await;
    let (config, _) = installed().await;
    let (app, url) = role(&admin).await;
    // Without its grants, connect says what to ask for.
    let refused = PgLocks::connect_with(&url, config.clone())
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("Roles and grants"),
        "{refused}"
    );
    grant(&admin, GRANTS_APP, config.schema(), &app).await;
    let locks = PgLocks::connect_with(&url, config.clone()).await.unwrap();
    let mut lock = locks.try_lock("app/a", "w1", TTL).await.unwrap().unwrap();
    lock.renew(TTL).await.unwrap();
    let waiter = tokio::spawn({
        let locks = locks.clone();
        async move { locks.acquire("app/a", "w2", TTL).await }
    });
    for _ in 0..200 {
        if !locks.snapshot().await.unwrap().waiting.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(locks.snapshot().await.unwrap().waiting.len(), 1);
    let mut own = common::client(&url).await;
    let tx = own.transaction().await.unwrap();
    lock.fence(&tx).await.unwrap();
    tx.commit().await.unwrap();
    assert!(lock.release().await.unwrap());
    let next = waiter.await.unwrap().unwrap().unwrap();
    assert_eq!(locks.holder("app/a").await.unwrap().unwrap().owner(), "w2");
    assert!(next.release().await.unwrap());
    // It may not change the schema: a schema that is not installed is refused, saying why.
    let other = config.clone().with_schema(common::fresh_schema());
    let refused = PgLocks::connect_with(&url, other).await.unwrap_err();
    assert!(
        refused.to_string().contains("Roles and grants"),
        "{refused}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_given_an_empty_schema_installs_it_without_create_on_the_database() {
    let admin = common::client(&common::url()).await;
    let (app, url) = role(&admin).await;
    let schema = common::fresh_schema();
    admin
        .batch_execute(&format!("CREATE SCHEMA \"{schema}\" AUTHORIZATION {app}"))
        .await
        .unwrap();
    let config = PgConfig::new()
        .with_schema(&schema)
        .with_io_timeout(Duration::from_secs(10));
    let locks = PgLocks::connect_with(&url, config).await.unwrap();
    let lock = locks.try_lock("own/a", "o", TTL).await.unwrap().unwrap();
    assert!(lock.release().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fence_only_role_gets_55f01_for_a_lapsed_lease_and_cannot_touch_the_rows() {
    let admin = common::client(&common::url()).await;
    let (config, locks) = installed().await;
    let (writer, url) = role(&admin).await;
    grant(&admin, GRANTS_FENCE, config.schema(), &writer).await;
    let lock = locks
        .try_lock("fence/a", "o", Duration::from_secs(5))
        .await
        .unwrap()
        .unwrap();
    let token = i64::try_from(lock.token()).unwrap();
    let mut client = common::client(&url).await;
    // Live: the fence passes and holds the row until the transaction ends.
    let tx = client.transaction().await.unwrap();
    tx.execute(&locks.fence_sql(), &[&"fence/a", &token])
        .await
        .unwrap();
    tx.commit().await.unwrap();
    // Lapsed: refused as a fence refusal, not as a missing right.
    locks
        .advance_test_clock(Duration::from_secs(6))
        .await
        .unwrap();
    let err = client
        .execute(&locks.fence_sql(), &[&"fence/a", &token])
        .await
        .unwrap_err();
    assert!(is_fence_error(&err), "{err:?}");
    assert_eq!(err.code().unwrap().code(), FENCE_SQLSTATE);
    // Never held with this token: the same.
    let err = client
        .execute(&locks.fence_sql(), &[&"fence/b", &1_i64])
        .await
        .unwrap_err();
    assert!(is_fence_error(&err), "{err:?}");
    // The rows themselves are out of its reach.
    let q = format!("\"{}\"", config.schema());
    for sql in [
        format!("UPDATE {q}.leases SET deadline = 0"),
        format!("SELECT * FROM {q}.leases"),
        format!("SELECT setval('{q}.floor', 0)"),
    ] {
        let err = client.batch_execute(&sql).await.unwrap_err();
        assert_eq!(err.code().unwrap().code(), "42501", "{sql}: {err:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_lists_and_force_releases_with_the_application_grants() {
    let admin = common::client(&common::url()).await;
    let (config, locks) = installed().await;
    let (operator, url) = role(&admin).await;
    grant(&admin, GRANTS_APP, config.schema(), &operator).await;
    let lock = locks.try_lock("op/a", "stuck", TTL).await.unwrap().unwrap();
    let ops = PgLocks::connect_with(&url, config).await.unwrap();
    let snapshot = ops.snapshot().await.unwrap();
    assert_eq!(snapshot.held.len(), 1);
    assert_eq!(snapshot.held[0].owner(), "stuck");
    let ended = ops.force_release("op/a").await.unwrap().unwrap();
    assert_eq!(ended.token(), lock.token());
    assert!(!lock.is_held().await.unwrap());
}

/// A schema whose functions PUBLIC may not execute (`ALTER DEFAULT PRIVILEGES .. REVOKE
/// EXECUTE ON FUNCTIONS FROM PUBLIC`): the README's grants (with EXECUTE) let the application
/// and the fence-only role work; a role missing a right (here: those on `cancelled`, and
/// EXECUTE) is refused at `connect`, the error naming each missing right and the README
/// section, not at every call after a successful connect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_missing_a_right_is_refused_at_connect_naming_it() {
    let admin = common::client(&common::url()).await;
    let (config, store) = installed().await;
    let schema = config.schema().to_owned();
    admin
        .batch_execute(&format!(
            "REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA \"{schema}\" FROM PUBLIC"
        ))
        .await
        .unwrap();
    // The README's grants: every call works, and the fence-only role's fence() too.
    let (app, url) = role(&admin).await;
    grant(&admin, GRANTS_APP, &schema, &app).await;
    let locks = PgLocks::connect_with(&url, config.clone()).await.unwrap();
    let lock = locks.try_lock("r/a", "app", TTL).await.unwrap().unwrap();
    assert!(locks.holder("r/a").await.unwrap().is_some());
    let (writer, writer_url) = role(&admin).await;
    grant(&admin, GRANTS_FENCE, &schema, &writer).await;
    let mut client = common::client(&writer_url).await;
    let tx = client.transaction().await.unwrap();
    lock.fence(&tx).await.unwrap();
    tx.rollback().await.unwrap();
    assert!(lock.release().await.unwrap());
    // A role with the table grants but none on `cancelled`, and no EXECUTE.
    let (short, short_url) = role(&admin).await;
    let partial = GRANTS_APP
        .replace(", @s.cancelled", "")
        .replace("GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA @s TO @r;\n", "");
    grant(&admin, &partial, &schema, &short).await;
    let refused = PgLocks::connect_with(&short_url, config.clone())
        .await
        .unwrap_err()
        .to_string();
    println!("{refused}");
    assert!(refused.contains("Roles and grants"), "{refused}");
    assert!(refused.contains("DELETE ON \""), "{refused}");
    assert!(refused.contains(".cancelled"), "{refused}");
    assert!(refused.contains("EXECUTE ON FUNCTION"), "{refused}");
    assert!(refused.contains("try_lock("), "{refused}");
    assert!(!refused.contains("installing"), "{refused}");
    drop(store);
}
