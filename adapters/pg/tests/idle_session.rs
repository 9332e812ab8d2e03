//! A role's `idle_session_timeout` ends no engine call (issue 20): the engine pins it to 0 on
//! every connection of its (pool, listener, clean-up), so a pause between calls longer than
//! the role's 50 ms never makes a release or force_release fail, nor leaves a lease held.

mod common;

use std::time::Duration;

use alkstore_pg::{PgConfig, PgLocks};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_idle_session_timeout_fails_no_call() {
    let admin = common::client(&common::url()).await;
    let role = common::fresh_schema().to_lowercase().replace('-', "_");
    admin
        .batch_execute(&format!(
            "CREATE ROLE {role} LOGIN SUPERUSER;
             ALTER ROLE {role} SET idle_session_timeout = '50ms';"
        ))
        .await
        .unwrap();
    let url = common::url().replacen("postgres@", &format!("{role}@"), 1);
    let config = PgConfig::new()
        .with_schema(common::fresh_schema())
        .with_io_timeout(Duration::from_secs(10));
    let locks = PgLocks::connect_with(&url, config).await.unwrap();
    let ttl = Duration::from_secs(60);
    let mut failed = Vec::new();
    for i in 0..30 {
        let name = format!("idle/{}", i % 3);
        tokio::time::sleep(Duration::from_millis(80)).await;
        let lock = match locks.try_lock(&name, "o", ttl).await {
            Ok(Some(lock)) => lock,
            other => {
                failed.push(format!("{i}: try_lock {other:?}"));
                continue;
            }
        };
        tokio::time::sleep(Duration::from_millis(80)).await;
        if i % 2 == 0 {
            match lock.release().await {
                Ok(true) => {}
                other => failed.push(format!("{i}: release {other:?}")),
            }
        } else {
            match locks.force_release(&name).await {
                Ok(Some(_)) => {}
                other => failed.push(format!("{i}: force_release {other:?}")),
            }
            drop(lock);
        }
    }
    println!("{} of 30 rounds failed", failed.len());
    assert!(failed.is_empty(), "{failed:#?}");
}
