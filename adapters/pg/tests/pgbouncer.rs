//! Behind PgBouncer (issue 20), a real one started by the test in front of the shared
//! cluster: with `pool_mode = session` the engine works, its settings pinned (a role whose
//! default isolation is serializable fails no call), and a `try_lock` told busy while a fence
//! held the name is never granted afterwards; with `pool_mode = transaction` it is refused at
//! `connect` with an error that says what to configure. And a `try_lock` withdrawn because
//! its caller was told it failed is never granted when its statement runs late.

mod bouncer;
mod common;

use std::time::Duration;

use alkstore_pg::{PgConfig, PgLocks};
use bouncer::Bouncer;

const TTL: Duration = Duration::from_secs(30);

/// A superuser login role of this run whose default isolation is serializable.
async fn serializable_role() -> String {
    let admin = common::client(&common::url()).await;
    let role = common::fresh_schema().to_lowercase().replace('-', "_");
    admin
        .batch_execute(&format!(
            "CREATE ROLE {role} LOGIN SUPERUSER;
             ALTER ROLE {role} SET default_transaction_isolation = 'serializable';
             ALTER ROLE {role} SET lock_timeout = '1ms';"
        ))
        .await
        .unwrap();
    role
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_pooling_works_with_the_settings_pinned() {
    let role = serializable_role().await;
    let bouncer = Bouncer::start(6439, "session", &["postgres", &role]);
    let config = PgConfig::new()
        .with_schema(common::fresh_schema())
        .with_io_timeout(Duration::from_secs(10));
    let locks = PgLocks::connect_with(&bouncer.url(&role), config.clone())
        .await
        .unwrap();
    // Contended: 6 tasks × 20 rounds of acquire, renew, release on two names.
    let tasks: Vec<_> = (0..6)
        .map(|t| {
            let locks = locks.clone();
            tokio::spawn(async move {
                let mut errors = Vec::new();
                for i in 0..20 {
                    let name = ["pb/a", "pb/b"][(t + i) % 2];
                    let acquired = locks
                        .acquire(name, "w", TTL)
                        .timeout(Duration::from_secs(20))
                        .await;
                    match acquired {
                        Ok(Some(mut lock)) => {
                            if let Err(e) = lock.renew(TTL).await {
                                errors.push(e.to_string());
                            }
                            match lock.release().await {
                                Ok(true) => {}
                                other => errors.push(format!("release: {other:?}")),
                            }
                        }
                        other => errors.push(format!("acquire: {other:?}")),
                    }
                }
                errors
            })
        })
        .collect();
    for task in tasks {
        let errors = task.await.unwrap();
        assert!(errors.is_empty(), "{errors:?}");
    }

    // A try_lock on a fenced name is told busy, and is not granted when the fence ends.
    let direct = PgLocks::connect_with(&common::url(), config).await.unwrap();
    let lock = direct
        .try_lock("pb/fenced", "holder", Duration::from_millis(1500))
        .await;
    let lock = lock.unwrap().unwrap();
    let mut user = common::client(&common::url()).await;
    let tx = user.transaction().await.unwrap();
    lock.fence(&tx).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1600)).await; // the lease lapses under the fence
    let polled = locks.try_lock("pb/fenced", "poller", TTL).await;
    assert!(matches!(polled, Ok(None)), "{polled:?}");
    tx.commit().await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let holder = direct.holder("pb/fenced").await.unwrap();
    assert!(
        holder.is_none(),
        "a try_lock told busy was granted after all: {holder:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_pooling_is_refused_at_connect_saying_what_to_configure() {
    let bouncer = Bouncer::start(6440, "transaction", &["postgres"]);
    let config = PgConfig::new()
        .with_schema(common::fresh_schema())
        .with_io_timeout(Duration::from_secs(10));
    let refused = PgLocks::connect_with(&bouncer.url("postgres"), config)
        .await
        .unwrap_err();
    let why = refused.to_string();
    assert!(why.contains("pool_mode = session"), "{why}");
}

/// A `try_lock` whose caller was told it failed (its reply did not come within the
/// `io_timeout`) is withdrawn by the kit (`cancel(name, rid, true)`); a statement of that
/// request that reaches the server only afterwards (stalled on the way, or queued behind a
/// pooler) answers busy instead of granting a lease nobody holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_lock_withdrawn_before_it_runs_is_never_granted() {
    let locks = common::store().await;
    let q = format!("\"{}\"", locks.config().schema());
    let client = common::client(&common::url()).await;
    for name in ["late/new", "late/free"] {
        if name == "late/free" {
            // A free row that stays (released).
            let lock = locks.try_lock(name, "o", TTL).await.unwrap().unwrap();
            assert!(lock.release().await.unwrap());
        }
        let rid = format!("rid-{name}");
        client
            .execute(&format!("SELECT {q}.cancel($1, $2, true)"), &[&name, &rid])
            .await
            .unwrap();
        let reply: Vec<i64> = client
            .query_one(
                &format!("SELECT {q}.try_lock($1, 'late', 30000000, $2)"),
                &[&name, &rid],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(
            reply[0], 0,
            "{name}: granted to a withdrawn request: {reply:?}"
        );
        assert!(locks.holder(name).await.unwrap().is_none(), "{name}");
        // Another request is granted as usual.
        let lock = locks.try_lock(name, "next", TTL).await.unwrap().unwrap();
        assert!(lock.release().await.unwrap());
    }
}
