//! A hot standby is refused at `connect` with an error that says so (issue 20), not at the
//! first call: a streaming replica made with `pg_basebackup -R` of a primary of the test's
//! own (fault ports: each test binary runs alone), never promoted.

mod common;

use std::time::Duration;

use alkstore_pg::{PgConfig, PgLocks};
use common::PgCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hot_standby_is_refused_at_connect() {
    let primary = PgCluster::start(5440);
    let config = PgConfig::new()
        .with_schema("standby_test")
        .with_io_timeout(Duration::from_secs(20));
    // The schema is installed on the primary, and replicated.
    let locks = PgLocks::connect_with(&primary.url(), config.clone())
        .await
        .unwrap();
    let lock = locks
        .try_lock("s/a", "o", Duration::from_secs(30))
        .await
        .unwrap();
    assert!(lock.is_some());
    let standby = PgCluster::standby_of(&primary, 5441);
    assert_eq!(standby.psql("SELECT pg_is_in_recovery()").trim(), "t");
    let refused = PgLocks::connect_with(&standby.url(), config.clone())
        .await
        .unwrap_err();
    let why = refused.to_string();
    assert!(
        why.contains("hot standby") && why.contains("connect to the primary"),
        "{why}"
    );
    // The primary goes on.
    assert!(lock.unwrap().release().await.unwrap());
}
