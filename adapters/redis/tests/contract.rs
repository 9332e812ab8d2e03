//! The contract on a real Redis (the shared test server of `make test-redis`): exclusion,
//! busy is `None`, renew and release rules, tokens, FIFO hand-off, validation identical to
//! the core's, and time on the server's clock (moved by the test-only offset).

mod common;

use std::time::Duration;

use alkstore_mem::{
    Config, LockError, LockHandle, LockRegistry, LockStore, ManualClock, validate::check_request,
};
use alkstore_redis::{RedisConfig, RedisLocks};
use common::store;

const TTL: Duration = Duration::from_secs(30);

fn advance_ms(ms: u64) -> Duration {
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
    let lock = locks
        .try_lock("t", "a", Duration::from_secs(10))
        .await
        .unwrap()
        .unwrap();
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let deadline = lock.deadline().as_duration();
    // The test server runs on this machine, so its clock agrees with ours to a second.
    let ahead = deadline.saturating_sub(unix);
    assert!(
        ahead > Duration::from_secs(8) && ahead < Duration::from_secs(12),
        "{ahead:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_lease_is_free_and_its_renew_and_release_are_refused() {
    let locks = store().await;
    let mut old = locks
        .try_lock("job", "a", advance_ms(60_000))
        .await
        .unwrap()
        .unwrap();
    locks.advance_test_clock(advance_ms(60_000)).await.unwrap();
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
        .try_lock("job", "a", advance_ms(60_000))
        .await
        .unwrap()
        .unwrap();
    let first = lock.deadline();
    locks.advance_test_clock(advance_ms(59_000)).await.unwrap();
    lock.renew(advance_ms(5_000)).await.unwrap();
    assert!(
        lock.deadline() > first,
        "reset to now + 5 s, past the old deadline (1 s of real time away, not 1 ms)"
    );
    assert_eq!(lock.ttl(), advance_ms(5_000));
    let token = lock.token();
    assert_eq!(
        locks.holder("job").await.unwrap().unwrap().deadline(),
        lock.deadline()
    );
    // Exactly at the deadline is too late (the offset moves time to at least it).
    locks.advance_test_clock(advance_ms(5_000)).await.unwrap();
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
    let a = locks
        .try_lock("job", "a", advance_ms(100))
        .await
        .unwrap()
        .unwrap();
    locks.advance_test_clock(advance_ms(100)).await.unwrap();
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
    let locks = common::store_with(
        RedisConfig::new()
            .with_max_name_len(8)
            .with_max_owner_len(4),
    )
    .await;
    // And a store whose server is gone: validation still answers first.
    let server = common::RedisServer::start(6395);
    let dead = RedisLocks::connect_with(
        &server.url(),
        RedisConfig::new()
            .with_max_name_len(8)
            .with_max_owner_len(4),
    )
    .await
    .unwrap();
    drop(server);
    let cases: &[(&str, &str, Duration)] = &[
        ("", "o", TTL),
        ("123456789", "o", TTL),
        ("a\nb", "o", TTL),
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
    assert!(matches!(
        dead.try_lock("ok", "o", TTL).await,
        Err(LockError::Unavailable { .. })
    ));
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
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(lock.release().await.unwrap());
            (i, token)
        }));
        // Let each queue before the next arrives.
        tokio::time::sleep(Duration::from_millis(50)).await;
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
        .try_lock("lapse", "a", advance_ms(300))
        .await
        .unwrap()
        .unwrap();
    let start = std::time::Instant::now();
    let lock = locks.acquire("lapse", "b", TTL).await.unwrap().unwrap();
    let took = start.elapsed();
    assert!(lock.token() > held.token());
    assert!(took < Duration::from_millis(400), "{took:?}");
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
    let waited = locks
        .acquire("b", "y", TTL)
        .timeout(advance_ms(200))
        .await
        .unwrap();
    assert!(waited.is_none());
    assert!(start.elapsed() >= advance_ms(190) && start.elapsed() < advance_ms(600));
    // The test clock also ends a wait: it is on the server's timeline.
    let store2 = locks.clone();
    let long = tokio::spawn(async move {
        store2
            .acquire("b", "z", TTL)
            .timeout(Duration::from_secs(3600))
            .await
    });
    tokio::time::sleep(advance_ms(100)).await;
    locks
        .advance_test_clock(Duration::from_secs(3600))
        .await
        .unwrap();
    // The holder lapsed too, but the waiter's own wait ended at the same moment.
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
    tokio::time::sleep(advance_ms(50)).await;
    let store3 = locks.clone();
    let next = tokio::spawn(async move { store3.acquire("d", "next", TTL).await });
    tokio::time::sleep(advance_ms(50)).await;
    dropped.abort();
    let _ = dropped.await;
    tokio::time::sleep(advance_ms(50)).await;
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
    assert!(waited.is_some());
    let detached = waited.unwrap();
    let token = detached.token();
    detached.detach();
    tokio::time::sleep(advance_ms(50)).await;
    assert_eq!(locks.holder("drop").await.unwrap().unwrap().token(), token);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_renews_and_lapsed_resolves_when_lost() {
    // keep_alive needs a ttl of twice the io_timeout: a 300 ms lease, a 150 ms io_timeout.
    let locks = common::store_with(RedisConfig::new().with_io_timeout(advance_ms(150))).await;
    let lock = locks
        .try_lock("k", "a", advance_ms(300))
        .await
        .unwrap()
        .unwrap();
    let token = lock.token();
    let alive = tokio::time::timeout(advance_ms(1000), lock.keep_alive(advance_ms(100))).await;
    assert!(alive.is_err(), "still renewing after 1 s of a 300 ms ttl");
    assert_eq!(locks.holder("k").await.unwrap().unwrap().token(), token);
    let start = std::time::Instant::now();
    let why = lock.lapsed().await;
    let took = start.elapsed();
    assert!(
        matches!(why, LockError::Expired { token: t, .. } if t == token),
        "{why:?}"
    );
    assert!(
        took >= advance_ms(150) && took < advance_ms(500),
        "{took:?}"
    );
    assert!(matches!(
        lock.keep_alive(Duration::ZERO).await,
        LockError::Expired { .. }
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_do_not_meet() {
    let a = store().await;
    let b = store().await;
    let _la = a.try_lock("same", "x", TTL).await.unwrap().unwrap();
    let _lb = b.try_lock("same", "y", TTL).await.unwrap().unwrap();
    assert!(format!("{a:?}").contains("namespace"));
    assert!(
        RedisLocks::connect_with(&common::url(), RedisConfig::new().with_namespace("a{b}"))
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generic_code_runs_unchanged() {
    async fn nightly<S: LockStore>(store: &S) -> Result<Option<u64>, LockError> {
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
    check::<RedisLocks>();
    fn send<T: Send + 'static>() {}
    send::<alkstore_redis::RedisLock>();
    send::<alkstore_redis::RedisAcquire>();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_refuses_a_ttl_its_io_timeout_cannot_renew_in_time() {
    // A 300 ms lease with the default 2 s io_timeout: one slow renewal could lose it, so
    // keep_alive refuses at once instead of pretending to keep it.
    let locks = store().await;
    let lock = locks
        .try_lock("short", "a", Duration::from_millis(300))
        .await
        .unwrap()
        .unwrap();
    let refused = tokio::time::timeout(Duration::from_secs(5), lock.keep_alive(Duration::ZERO))
        .await
        .expect("refused at once, not after the lease");
    assert_eq!(
        refused,
        LockError::InvalidTtl {
            ttl: Duration::from_millis(300),
            problem: alkstore_mem::TtlProblem::TooShortToKeepAlive {
                io_timeout: Duration::from_secs(2)
            },
        }
    );
    assert!(
        lock.is_held().await.unwrap(),
        "the lease itself is untouched"
    );
    // with_lock asked to keep it alive gives the same answer before the body runs.
    drop(lock);
    let options =
        alkstore_mem::LockOptions::ttl(Duration::from_millis(300)).keep_alive(Duration::ZERO);
    let ran = alkstore_mem::with_lock(&locks, "short", "b", options, |_| async {}).await;
    assert!(matches!(ran, Err(LockError::InvalidTtl { .. })), "{ran:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_see_only_their_own_namespace_even_with_glob_characters_in_it() {
    let base = common::fresh_namespace();
    let open = |ns: String| common::store_in(ns);
    let star = open(format!("{base}*")).await;
    let plain = open(format!("{base}x")).await;
    let bracket = open(format!("{base}[x]")).await;
    let _a = star.try_lock("a", "star", TTL).await.unwrap().unwrap();
    let _b = plain.try_lock("b", "plain", TTL).await.unwrap().unwrap();
    let _c = bracket
        .try_lock("c", "bracket", TTL)
        .await
        .unwrap()
        .unwrap();
    for (store, name) in [(&star, "a"), (&plain, "b"), (&bracket, "c")] {
        let held = store.snapshot().await.unwrap().held;
        let names: Vec<&str> = held.iter().map(|l| l.name()).collect();
        assert_eq!(names, [name]);
    }
    // Hostile names round-trip through SCAN and the script.
    let weird = ["*", "a\\b", "[x]", "100%", "ü/ñ", "q?"];
    let mut held = Vec::new();
    for name in weird {
        held.push(plain.try_lock(name, "o", TTL).await.unwrap().unwrap());
    }
    let mut names: Vec<String> = (plain.snapshot().await.unwrap().held.iter())
        .map(|l| l.name().to_owned())
        .collect();
    let mut expected: Vec<String> = weird.iter().map(|n| n.to_string()).collect();
    expected.push("b".into());
    expected.sort();
    names.sort();
    assert_eq!(names, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_future_of_the_engine_is_a_named_send_type() {
    use alkstore_redis::{RedisAcquire, RedisFuture, RedisKeepAlive, RedisLapsed, RedisLock};
    fn send_static<T: Send + 'static>(_: &T) {}
    /// What a user's guard task might keep in a struct: every future by its name.
    struct Guard<'a> {
        alive: RedisKeepAlive<'a>,
        lapsed: RedisLapsed<'a>,
        held: RedisFuture<'a, bool>,
    }
    let locks =
        common::store_with(RedisConfig::new().with_io_timeout(Duration::from_millis(500))).await;
    let acquire: RedisAcquire = locks.acquire("named", "a", Duration::from_secs(5));
    send_static(&acquire);
    let lock: RedisLock = acquire.await.unwrap().unwrap();
    {
        let guard = Guard {
            alive: lock.keep_alive(Duration::from_secs(1)),
            lapsed: lock.lapsed(),
            held: lock.is_held(),
        };
        assert!(guard.held.await.unwrap());
        let (alive, lapsed) = (guard.alive, guard.lapsed);
        tokio::select! {
            lost = alive => panic!("lost: {lost}"),
            why = lapsed => panic!("lapsed: {why}"),
            () = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
    }
    let release: RedisFuture<'static, bool> = lock.release();
    send_static(&release);
    assert!(tokio::spawn(release).await.unwrap().unwrap());
}
