//! The contract on a real PostgreSQL (the shared test cluster of `make test-pg`): exclusion,
//! busy is `None`, renew and release rules, tokens, FIFO hand-off, validation identical to
//! the core's, hostile names as parameters, schemas apart, time on the server's clock (moved
//! by the test-only offset).

mod common;

use std::time::Duration;

use alkstore_mem::{
    Config, LockError, LockRegistry, LockStore, ManualClock, validate::check_request,
};
use alkstore_pg::{PgConfig, PgLocks};
use common::store;

const TTL: Duration = Duration::from_secs(30);

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_name_is_busy_for_everyone_the_same_owner_included() {
    let locks = store().await;
    let lock = locks.try_lock("job", "a", TTL).await.unwrap().unwrap();
    assert!(locks.try_lock("job", "b", TTL).await.unwrap().is_none());
    assert!(locks.try_lock("job", "a", TTL).await.unwrap().is_none());
    let other = locks.try_lock("other", "b", TTL).await.unwrap().unwrap();
    let info = locks.holder("job").await.unwrap().unwrap();
    assert_eq!(
        (info.name(), info.owner(), info.token()),
        ("job", "a", lock.token())
    );
    assert_eq!(info.deadline(), lock.deadline());
    assert_eq!(lock.info(), info);
    assert!(lock.is_held().await.unwrap());
    assert!(lock.release().await.unwrap());
    assert!(locks.holder("job").await.unwrap().is_none());
    let again = locks.try_lock("job", "b", TTL).await.unwrap().unwrap();
    assert!(again.token() > other.token());
    assert!(other.token() > info.token());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadlines_are_on_the_servers_clock() {
    let locks = store().await;
    let lock = locks.try_lock("t", "a", ms(10_000)).await.unwrap().unwrap();
    let unix = std::time::UNIX_EPOCH.elapsed().unwrap();
    let ahead = lock.deadline().as_duration().saturating_sub(unix);
    // The test cluster runs on this machine, so its clock agrees with ours to a second.
    assert!(ahead > ms(8_000) && ahead < ms(12_000), "{ahead:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_lease_is_free_and_its_renew_and_release_are_refused() {
    let locks = store().await;
    let mut old = locks
        .try_lock("job", "a", ms(60_000))
        .await
        .unwrap()
        .unwrap();
    locks.advance_test_clock(ms(60_000)).await.unwrap();
    assert!(!old.is_held().await.unwrap());
    assert!(locks.holder("job").await.unwrap().is_none());
    let err = old.renew(TTL).await.unwrap_err();
    assert!(
        matches!(&err, LockError::Expired { name, token, .. } if name == "job" && *token == old.token()),
        "{err:?}"
    );
    let new = locks.try_lock("job", "b", TTL).await.unwrap().unwrap();
    assert!(new.token() > old.token());
    assert!(
        !old.release().await.unwrap(),
        "lapsed: false, and the new lease stays"
    );
    assert_eq!(
        locks.holder("job").await.unwrap().unwrap().token(),
        new.token()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renew_is_an_absolute_reset_and_refused_at_the_deadline() {
    let locks = store().await;
    let mut lock = locks
        .try_lock("job", "a", ms(60_000))
        .await
        .unwrap()
        .unwrap();
    let first = lock.deadline();
    locks.advance_test_clock(ms(59_000)).await.unwrap();
    lock.renew(ms(5_000)).await.unwrap();
    assert!(
        lock.deadline() > first,
        "reset to now + 5 s, past the old deadline"
    );
    assert_eq!(lock.ttl(), ms(5_000));
    let token = lock.token();
    assert_eq!(
        locks.holder("job").await.unwrap().unwrap().deadline(),
        lock.deadline()
    );
    // An earlier deadline is an absolute reset too.
    lock.renew(ms(2_000)).await.unwrap();
    assert_eq!(lock.ttl(), ms(2_000));
    locks.advance_test_clock(ms(2_000)).await.unwrap();
    assert!(matches!(
        lock.renew(TTL).await,
        Err(LockError::Expired { .. })
    ));
    assert_eq!(lock.token(), token);
    assert!(matches!(
        lock.renew(Duration::ZERO).await,
        Err(LockError::InvalidTtl { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_never_frees_a_newer_lease() {
    let locks = store().await;
    let a = locks.try_lock("job", "a", ms(100)).await.unwrap().unwrap();
    locks.advance_test_clock(ms(100)).await.unwrap();
    let b = locks.try_lock("job", "b", TTL).await.unwrap().unwrap();
    assert!(!a.release().await.unwrap());
    assert!(locks.try_lock("job", "c", TTL).await.unwrap().is_none());
    assert!(b.release().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_strictly_increase_across_names_and_clones() {
    let locks = store().await;
    let clone = locks.clone();
    let mut last = 0;
    for i in 0..50 {
        let store = if i % 2 == 0 { &locks } else { &clone };
        let lock = store
            .try_lock(&format!("n{}", i % 7), "o", TTL)
            .await
            .unwrap()
            .unwrap();
        assert!(lock.token() > last);
        last = lock.token();
        assert!(lock.release().await.unwrap());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validation_errors_are_the_cores_and_need_no_server() {
    let limits = Config::default().with_max_name_len(8).with_max_owner_len(4);
    let registry = LockRegistry::with_config(ManualClock::new(), limits);
    let config = PgConfig::new().with_max_name_len(8).with_max_owner_len(4);
    let locks = common::store_with(config.clone()).await;
    // And a store whose server is gone: validation still answers first.
    let cluster = common::PgCluster::start(5440);
    let dead = PgLocks::connect_with(&cluster.url(), config.with_io_timeout(ms(500)))
        .await
        .unwrap();
    drop(cluster);
    let cases: &[(&str, &str, Duration)] = &[
        ("", "o", TTL),
        ("123456789", "o", TTL),
        ("a\nb", "o", TTL),
        ("a\0b", "o", TTL),
        ("a\u{85}b", "o", TTL),
        ("alk:x", "o", TTL),
        ("ALK:x", "o", TTL),
        ("ok", "", TTL),
        ("ok", "12345", TTL),
        ("ok", "o", Duration::ZERO),
        ("", "", Duration::ZERO),
    ];
    for &(name, owner, ttl) in cases {
        let expected = registry.try_lock(name, owner, ttl).unwrap_err();
        assert_eq!(
            check_request(name, owner, ttl, &limits).unwrap_err(),
            expected
        );
        assert_eq!(
            locks.try_lock(name, owner, ttl).await.unwrap_err(),
            expected
        );
        assert_eq!(dead.try_lock(name, owner, ttl).await.unwrap_err(), expected);
        assert_eq!(locks.acquire(name, owner, ttl).await.unwrap_err(), expected);
        assert_eq!(
            LockStore::try_lock(&locks, name, owner, ttl)
                .await
                .unwrap_err(),
            expected
        );
    }
    assert!(locks.holder("alk:x").await.unwrap().is_none());
    assert!(
        dead.holder("").await.unwrap().is_none(),
        "invalid names need no round trip"
    );
    assert!(dead.force_release("").await.unwrap().is_none());
    let err = dead.try_lock("ok", "o", TTL).await.unwrap_err();
    assert!(matches!(err, LockError::Unavailable { .. }), "{err:?}");
}

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
async fn waiters_are_served_in_order_with_hand_off_and_no_barging() {
    let locks = store().await;
    let first = locks.try_lock("q", "holder", TTL).await.unwrap().unwrap();
    let mut waiting = Vec::new();
    for i in 0..4 {
        let store = locks.clone();
        waiting.push(tokio::spawn(async move {
            let lock = store
                .acquire("q", &format!("w{i}"), TTL)
                .await
                .unwrap()
                .unwrap();
            let token = lock.token();
            tokio::time::sleep(ms(20)).await;
            assert!(lock.release().await.unwrap());
            (i, token)
        }));
        // Let each queue before the next arrives.
        tokio::time::sleep(ms(80)).await;
    }
    assert!(first.release().await.unwrap());
    // Handed straight to w0: a try_lock in between finds it busy.
    let holder = locks.holder("q").await.unwrap().unwrap();
    assert_eq!(holder.owner(), "w0");
    assert!(locks.try_lock("q", "barger", TTL).await.unwrap().is_none());
    let mut last = 0;
    for (expected, task) in waiting.into_iter().enumerate() {
        let (i, token) = task.await.unwrap();
        assert_eq!(i, expected);
        assert!(token > last);
        last = token;
    }
    assert!(locks.try_lock("q", "late", TTL).await.unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_takes_a_lease_that_lapses_at_its_deadline() {
    let locks = store().await;
    let held = locks
        .try_lock("lapse", "a", ms(300))
        .await
        .unwrap()
        .unwrap();
    let start = std::time::Instant::now();
    let lock = locks.acquire("lapse", "b", TTL).await.unwrap().unwrap();
    let took = start.elapsed();
    assert!(lock.token() > held.token());
    assert!(took < ms(500), "{took:?}");
    held.detach();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bounded_waits_end_with_none_and_leave_the_queue() {
    let locks = store().await;
    let held = locks.try_lock("b", "a", TTL).await.unwrap().unwrap();
    assert!(
        locks
            .acquire("b", "x", TTL)
            .timeout(Duration::ZERO)
            .await
            .unwrap()
            .is_none()
    );
    let start = std::time::Instant::now();
    let waited = locks.acquire("b", "y", TTL).timeout(ms(200)).await.unwrap();
    assert!(waited.is_none());
    assert!(
        start.elapsed() >= ms(190) && start.elapsed() < ms(700),
        "{:?}",
        start.elapsed()
    );
    // The test clock also ends a wait: it is on the server's timeline.
    let store2 = locks.clone();
    let long = tokio::spawn(async move {
        store2
            .acquire("b", "z", TTL)
            .timeout(Duration::from_secs(3600))
            .await
    });
    tokio::time::sleep(ms(100)).await;
    locks
        .advance_test_clock(Duration::from_secs(3600))
        .await
        .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(2), long)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    drop(out);
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_waiter_leaves_the_queue_and_passes_on_a_handed_lease() {
    let locks = store().await;
    let held = locks.try_lock("d", "a", TTL).await.unwrap().unwrap();
    let store2 = locks.clone();
    let dropped = tokio::spawn(async move { store2.acquire("d", "dropped", TTL).await });
    tokio::time::sleep(ms(80)).await;
    let store3 = locks.clone();
    let next = tokio::spawn(async move { store3.acquire("d", "next", TTL).await });
    tokio::time::sleep(ms(80)).await;
    dropped.abort();
    let _ = dropped.await;
    tokio::time::sleep(ms(80)).await;
    assert!(held.release().await.unwrap());
    let lock = tokio::time::timeout(Duration::from_secs(2), next)
        .await
        .unwrap()
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(lock.owner(), "next");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_handle_releases_it() {
    let locks = store().await;
    let lock = locks.try_lock("drop", "a", TTL).await.unwrap().unwrap();
    drop(lock);
    let waited = locks
        .acquire("drop", "b", TTL)
        .timeout(Duration::from_secs(2))
        .await
        .unwrap();
    let detached = waited.expect("released by the drop");
    let token = detached.token();
    detached.detach();
    tokio::time::sleep(ms(50)).await;
    assert_eq!(locks.holder("drop").await.unwrap().unwrap().token(), token);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_renews_while_the_work_reads_the_lock_and_lapsed_gives_the_reason() {
    let locks = common::store_with(PgConfig::new().with_io_timeout(ms(100))).await;
    let lock = locks.try_lock("k", "a", ms(300)).await.unwrap().unwrap();
    let token = lock.token();
    let first = lock.deadline();
    // keep_alive takes &self: the work reads the lock meanwhile.
    let work = async {
        for _ in 0..10 {
            assert!(lock.is_held().await.unwrap());
            assert_eq!(lock.token(), token);
            tokio::time::sleep(ms(100)).await;
        }
        lock.deadline()
    };
    let later = tokio::select! {
        lost = lock.keep_alive(ms(100)) => panic!("lost: {lost}"),
        deadline = work => deadline,
    };
    assert!(later > first, "the handle follows keep_alive's renewals");
    assert_eq!(locks.holder("k").await.unwrap().unwrap().token(), token);
    let start = std::time::Instant::now();
    let why = lock.lapsed().await;
    let took = start.elapsed();
    assert!(
        matches!(&why, LockError::Expired { token: t, .. } if *t == token),
        "{why:?}"
    );
    assert!(took >= ms(100) && took < ms(600), "{took:?}");
    assert!(matches!(
        lock.keep_alive(Duration::ZERO).await,
        LockError::Expired { .. }
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_refuses_a_ttl_below_twice_the_io_timeout() {
    let locks = common::store_with(PgConfig::new().with_io_timeout(ms(500))).await;
    let lock = locks
        .try_lock("short", "a", ms(999))
        .await
        .unwrap()
        .unwrap();
    let err = tokio::time::timeout(ms(50), lock.keep_alive(ms(100)))
        .await
        .unwrap();
    assert!(matches!(err, LockError::InvalidTtl { .. }), "{err:?}");
    assert!(lock.is_held().await.unwrap(), "nothing changed");
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
async fn schemas_do_not_meet() {
    let a = store().await;
    let b = store().await;
    let la = a.try_lock("same", "x", TTL).await.unwrap().unwrap();
    let lb = b.try_lock("same", "y", TTL).await.unwrap().unwrap();
    // Tokens are per schema; a waiter in one is not woken by a release in the other.
    assert_eq!((la.token(), lb.token()), (1, 1));
    let waiter = {
        let b = b.clone();
        tokio::spawn(async move { b.acquire("same", "w", TTL).timeout(ms(300)).await })
    };
    tokio::time::sleep(ms(80)).await;
    assert!(la.release().await.unwrap());
    assert!(
        waiter.await.unwrap().unwrap().is_none(),
        "a's release is not b's"
    );
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
    drop(lb);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_processes_may_install_one_schema_at_once() {
    let schema = common::fresh_schema();
    let connects: Vec<_> = (0..6)
        .map(|_| {
            let schema = schema.clone();
            tokio::spawn(async move {
                PgLocks::connect_with(&common::url(), PgConfig::new().with_schema(schema)).await
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
        (2, "test".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generic_code_runs_unchanged() {
    async fn nightly<S: LockStore>(store: &S) -> Result<Option<u64>, LockError> {
        use alkstore_mem::LockHandle;
        let Some(lock) = store.try_lock("nightly", "host-1", TTL).await? else {
            return Ok(None);
        };
        let token = lock.token();
        lock.release().await?;
        Ok(Some(token))
    }
    let locks = store().await;
    assert!(nightly(&locks).await.unwrap().is_some());
    let registry = LockRegistry::new(ManualClock::new());
    assert_eq!(nightly(&registry).await.unwrap(), Some(1));
}

#[test]
fn stores_are_clone_debug_send_sync() {
    fn check<T: Clone + std::fmt::Debug + Send + Sync + 'static>() {}
    check::<PgLocks>();
    fn send<T: Send + Sync + 'static>() {}
    send::<alkstore_pg::PgLock>();
    fn send_only<T: Send + 'static>() {}
    send_only::<alkstore_pg::PgAcquire>();
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
