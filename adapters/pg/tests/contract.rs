//! The contract on a real PostgreSQL (the shared test cluster of `make test-pg`): the shared
//! suite of `alkstore-kit-harness` (exclusion, busy is `None`, renew and release rules,
//! tokens, FIFO hand-off, validation identical to the core's, time on the server's clock moved
//! by the test-only offset), then what only PostgreSQL has: hostile names and owners as bound
//! parameters, schema names checked and quoted, concurrent installs of one schema, and the
//! `NOTIFY '*'` wake-ups of a force-release and a moved test clock.

mod common;

use std::time::Duration;

use alkstore_mem::LockError;
use alkstore_pg::{PgConfig, PgLocks};
use common::store;

const TTL: Duration = Duration::from_secs(30);

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

alkstore_kit_harness::contract_tests!(common::Fixture);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_names_and_owners_are_parameters() {
    let locks = store().await;
    let names = [
        "it's",
        "\"quoted\"",
        "100%_like",
        "back\\slash",
        "'; DROP TABLE leases; --",
        "$fn$ $$",
        "ü ✓ 🚀 中文",
        "@s@ @chan@",
    ];
    let long = "é".repeat(128); // 256 bytes: the limit
    let owners = ["o'wner", "nul\0inside", "back\\0slash", "\\", "%"];
    let mut last = 0;
    for (i, name) in names.iter().copied().chain([long.as_str()]).enumerate() {
        let owner = owners[i % owners.len()];
        let lock = locks.try_lock(name, owner, TTL).await.unwrap().unwrap();
        assert!(lock.token() > last);
        last = lock.token();
        let info = locks.holder(name).await.unwrap().unwrap();
        assert_eq!((info.name(), info.owner()), (name, owner));
        assert!(locks.try_lock(name, "other", TTL).await.unwrap().is_none());
        // A name that differs by a byte is another lock.
        let near = match name.strip_prefix('é') {
            Some(rest) => format!("ê{rest}"),
            None => format!("{name}x"),
        };
        assert!(locks.try_lock(&near, "other", TTL).await.unwrap().is_some());
        assert!(lock.release().await.unwrap());
    }
    // LIKE patterns are not patterns.
    let held = locks.try_lock("a%", "o", TTL).await.unwrap().unwrap();
    assert!(locks.try_lock("abc", "o", TTL).await.unwrap().is_some());
    assert!(locks.holder("a_").await.unwrap().is_none());
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lapsed_reports_a_release_elsewhere_and_a_force_release() {
    let locks = store().await;
    let lock = locks.try_lock("f", "a", TTL).await.unwrap().unwrap();
    let waiter = {
        let locks = locks.clone();
        tokio::spawn(async move { locks.acquire("f", "next", TTL).await })
    };
    tokio::time::sleep(ms(80)).await;
    let ended = locks.force_release("f").await.unwrap().unwrap();
    assert_eq!((ended.owner(), ended.token()), ("a", lock.token()));
    let next = waiter.await.unwrap().unwrap().unwrap();
    assert!(next.token() > lock.token());
    let why = tokio::time::timeout(ms(500), lock.lapsed()).await.unwrap();
    assert!(matches!(why, LockError::Expired { .. }), "{why:?}");
    assert!(matches!(
        lock.keep_alive(Duration::ZERO).await,
        LockError::Expired { .. }
    ));
    assert!(!lock.release().await.unwrap());
    assert!(locks.force_release("f").await.unwrap().is_some());
    assert!(locks.force_release("f").await.unwrap().is_none());
    assert!(locks.force_release("never").await.unwrap().is_none());
    drop(next);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemas_are_checked_quoted_and_shown() {
    let a = store().await;
    assert!(format!("{a:?}").contains("schema"));
    for bad in ["a\"b", "x;y", "pg_locks", ""] {
        let err = PgLocks::connect_with(&common::url(), PgConfig::new().with_schema(bad))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("invalid PgConfig: schema"),
            "{err}"
        );
    }
    // Quoted as given: a schema that differs only by case is another one.
    let upper = PgConfig::new().with_schema(format!("{}X", a.config().schema().to_uppercase()));
    let b = PgLocks::connect_with(&common::url(), upper).await.unwrap();
    let held = a.try_lock("same", "x", TTL).await.unwrap().unwrap();
    assert!(b.try_lock("same", "y", TTL).await.unwrap().is_some());
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_processes_may_install_one_schema_at_once() {
    let schema = common::fresh_schema();
    let connects: Vec<_> = (0..6)
        .map(|_| {
            let schema = schema.clone();
            tokio::spawn(async move {
                // A generous io_timeout: six sessions installing one schema at once took over
                // the default 2 s on a machine busy with make test's compilers; what is tested
                // is that every install succeeds, not how fast.
                let config = PgConfig::new()
                    .with_schema(schema)
                    .with_io_timeout(Duration::from_secs(15));
                PgLocks::connect_with(&common::url(), config).await
            })
        })
        .collect();
    let mut stores = Vec::new();
    for c in connects {
        stores.push(c.await.unwrap().expect("every connect succeeds"));
    }
    let lock = stores[0].try_lock("one", "a", TTL).await.unwrap().unwrap();
    for s in &stores[1..] {
        assert!(s.try_lock("one", "b", TTL).await.unwrap().is_none());
    }
    drop(lock);
    // A plain build refuses this test-clock schema, and the other way round; a client sees
    // the version row.
    let client = common::client(&common::url()).await;
    let row = client
        .query_one(
            &format!("SELECT version, clock FROM \"{schema}\".meta"),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        (row.get::<_, i32>(0), row.get::<_, String>(1)),
        (4, "test".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_follows_a_moved_test_clock_at_once() {
    let locks = store().await;
    let lock = locks.try_lock("moved", "a", TTL).await.unwrap().unwrap();
    let first = lock.deadline();
    let work = async {
        // Let keep_alive start listening, then move the clock past its first renewal.
        tokio::time::sleep(ms(300)).await;
        locks.advance_test_clock(ms(20_000)).await.unwrap();
        for _ in 0..50 {
            if lock.deadline() > first {
                return lock.deadline();
            }
            tokio::time::sleep(ms(20)).await;
        }
        panic!("not renewed within a second of the moved clock");
    };
    let renewed = tokio::select! {
        lost = lock.keep_alive(ms(10_000)) => panic!("lost: {lost}"),
        deadline = work => deadline,
    };
    assert!(renewed >= first.saturating_add(ms(20_000)));
}
