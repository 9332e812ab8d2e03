//! The pool's size is clamped (a public constructor never panics on it): `usize::MAX`
//! connects with `PgConfig::MAX_POOL_SIZE` connections, all opened at connect (as the docs
//! say), and leaves the server room for other clients.

mod common;

use alkstore_pg::{PgConfig, PgLocks};

/// How many backends run with `application_name = app`.
async fn backends(admin: &tokio_postgres::Client, app: &str) -> i64 {
    admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &[&app],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_pool_size_is_clamped_and_connects() {
    let config = PgConfig::new()
        .with_schema(common::fresh_schema())
        .with_pool_size(usize::MAX);
    assert_eq!(config.pool_size(), PgConfig::MAX_POOL_SIZE);
    let app = format!("poolsize{}", std::process::id());
    let url = format!("{}?application_name={app}", common::url());
    // Spawned, so that a panic inside connect_with shows as a failed join, not a lost test.
    let store = tokio::spawn(async move { PgLocks::connect_with(&url, config).await })
        .await
        .expect("connect_with does not panic")
        .expect("connects");
    let admin = common::client(&common::url()).await;
    let opened = backends(&admin, &app).await;
    // The pool's connections, all opened at connect, and the one that listens.
    assert!(
        opened >= PgConfig::MAX_POOL_SIZE as i64 && opened <= PgConfig::MAX_POOL_SIZE as i64 + 1,
        "{opened} backends for a pool of {}",
        PgConfig::MAX_POOL_SIZE
    );
    let lock = store
        .try_lock("job", "me", std::time::Duration::from_secs(30))
        .await
        .unwrap()
        .expect("granted");
    assert!(lock.release().await.unwrap());
    let other = tokio_postgres::connect(&common::url(), tokio_postgres::NoTls).await;
    assert!(other.is_ok(), "another client still gets a connection");
}
