//! The database's and role's settings change no answer (issue 20): the engine pins the
//! isolation level, `statement_timeout`, `lock_timeout`, `idle_in_transaction_session_timeout`
//! and `synchronous_commit` for its own sessions, so a role whose default isolation is
//! `repeatable read` or `serializable`, or whose timeouts are 1 ms, installs the schema and
//! runs a contended workload without one failed call.

mod common;

use std::time::Duration;

use alkstore_mem::LockError;
use alkstore_pg::{PgConfig, PgLocks};

/// A login role of this run with `settings` (`ALTER ROLE .. SET`), superuser (privileges are
/// `grants.rs`'s subject): its URL on the shared cluster.
async fn role_with(settings: &[(&str, &str)]) -> String {
    let admin = common::client(&common::url()).await;
    let role = common::fresh_schema().to_lowercase().replace('-', "_");
    admin
        .batch_execute(&format!("CREATE ROLE {role} LOGIN SUPERUSER"))
        .await
        .unwrap();
    for (key, value) in settings {
        admin
            .batch_execute(&format!("ALTER ROLE {role} SET {key} = '{value}'"))
            .await
            .unwrap();
    }
    common::url().replacen("postgres@", &format!("{role}@"), 1)
}

/// 6 tasks × 25 rounds on two names: `acquire` (waiting), `renew`, `release`, `try_lock`
/// and `holder`: every error counted.
async fn contended(locks: &PgLocks) -> (usize, Vec<LockError>) {
    let tasks: Vec<_> = (0..6)
        .map(|t| {
            let locks = locks.clone();
            tokio::spawn(async move {
                let (mut ok, mut errors) = (0, Vec::new());
                for i in 0..25 {
                    let name = ["iso/a", "iso/b"][(t + i) % 2];
                    let ttl = Duration::from_secs(5);
                    let acquired = locks
                        .acquire(name, "w", ttl)
                        .timeout(Duration::from_secs(20))
                        .await;
                    match acquired {
                        Ok(None) => errors.push(alkstore_kit::unavailable("acquire timed out")),
                        Ok(Some(mut lock)) => {
                            match lock.renew(ttl).await {
                                Ok(()) => ok += 1,
                                Err(e) => errors.push(e),
                            }
                            match lock.release().await {
                                Ok(true) => ok += 1,
                                Ok(false) => {
                                    errors.push(alkstore_kit::unavailable("release answered false"))
                                }
                                Err(e) => errors.push(e),
                            }
                        }
                        Err(e) => errors.push(e),
                    }
                    match locks.try_lock(name, "t", ttl).await {
                        Ok(Some(lock)) => match lock.release().await {
                            Ok(_) => ok += 1,
                            Err(e) => errors.push(e),
                        },
                        Ok(None) => ok += 1,
                        Err(e) => errors.push(e),
                    }
                    match locks.holder(name).await {
                        Ok(_) => ok += 1,
                        Err(e) => errors.push(e),
                    }
                }
                (ok, errors)
            })
        })
        .collect();
    let mut all = (0, Vec::new());
    for task in tasks {
        let (ok, errors) = task.await.unwrap();
        all.0 += ok;
        all.1.extend(errors);
    }
    all
}

async fn no_call_fails_for(settings: &[(&str, &str)]) {
    let url = role_with(settings).await;
    let config = PgConfig::new()
        .with_schema(common::fresh_schema())
        .with_io_timeout(Duration::from_secs(10));
    let locks = PgLocks::connect_with(&url, config)
        .await
        .unwrap_or_else(|e| panic!("{settings:?}: connect: {e}"));
    let (ok, errors) = contended(&locks).await;
    println!("{settings:?}: {ok} calls answered, {} failed", errors.len());
    assert!(errors.is_empty(), "{settings:?}: {errors:?}");
    // A second store on the installed schema, under the same settings, checks it and works.
    let again = PgLocks::connect_with(&url, locks.config().clone())
        .await
        .unwrap();
    let lock = again.try_lock("iso/c", "o", Duration::from_secs(5)).await;
    assert!(lock.unwrap().unwrap().release().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_committed_role() {
    no_call_fails_for(&[("default_transaction_isolation", "read committed")]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeatable_read_role() {
    no_call_fails_for(&[("default_transaction_isolation", "repeatable read")]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serializable_role() {
    no_call_fails_for(&[("default_transaction_isolation", "serializable")]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_timeouts_role() {
    no_call_fails_for(&[
        ("statement_timeout", "1ms"),
        ("lock_timeout", "1ms"),
        ("idle_in_transaction_session_timeout", "1ms"),
        ("default_transaction_isolation", "serializable"),
        ("default_transaction_deferrable", "on"),
    ])
    .await;
}
