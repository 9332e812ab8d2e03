//! The contract on the shared server: exclusion, busy is `None`, renew and release rules,
//! tokens, FIFO hand-off, validation identical to the core's, and time on the server's clock
//! (moved by the engine's test clock).

use std::time::{Duration, Instant};

use alkstore_kit::{CommonConfig, Protocol};
use alkstore_mem::{
    Config, LockError, LockHandle, LockRegistry, LockStore, ManualClock, validate::check_request,
};

use crate::support::{fresh_scope, io, run, store, store_at, store_with};
use crate::{Fixture, Server, Store, ports};

const TTL: Duration = Duration::from_secs(30);

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// A held name is busy for everyone, the same owner included; tokens increase.
pub fn a_held_name_is_busy_for_everyone_the_same_owner_included<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
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
    });
}

/// Deadlines are on the server's clock (which agrees with this machine's to a second).
pub fn deadlines_are_on_the_servers_clock<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let lock = locks
            .try_lock("t", "a", Duration::from_secs(10))
            .await
            .unwrap()
            .unwrap();
        let unix = std::time::UNIX_EPOCH.elapsed().unwrap();
        let ahead = lock.deadline().as_duration().saturating_sub(unix);
        assert!(
            ahead > Duration::from_secs(8) && ahead < Duration::from_secs(12),
            "{ahead:?}"
        );
    });
}

/// A lapsed lease is free; its renew and release are refused.
pub fn a_lapsed_lease_is_free_and_its_renew_and_release_are_refused<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
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
            "lapsed: false, the new lease stays"
        );
        let holder = locks.holder("job").await.unwrap().unwrap();
        assert_eq!(holder.token(), new.token());
    });
}

/// Renew resets the deadline to the server's now + ttl, and is refused at the deadline.
pub fn renew_is_an_absolute_reset_and_refused_at_the_deadline<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
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
        let holder = locks.holder("job").await.unwrap().unwrap();
        assert_eq!(holder.deadline(), lock.deadline());
        // Exactly at the deadline is too late.
        locks.advance_test_clock(ms(5_000)).await.unwrap();
        assert!(matches!(
            lock.renew(TTL).await,
            Err(LockError::Expired { .. })
        ));
        assert_eq!(lock.token(), token);
        assert!(matches!(
            lock.renew(Duration::ZERO).await,
            Err(LockError::InvalidTtl { .. })
        ));
    });
}

/// A release compares the token: it never frees a newer lease.
pub fn release_never_frees_a_newer_lease<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let a = locks.try_lock("job", "a", ms(100)).await.unwrap().unwrap();
        locks.advance_test_clock(ms(100)).await.unwrap();
        let b = locks.try_lock("job", "b", TTL).await.unwrap().unwrap();
        assert!(!a.release().await.unwrap());
        assert!(locks.try_lock("job", "c", TTL).await.unwrap().is_none());
        assert!(b.release().await.unwrap());
    });
}

/// Tokens strictly increase across names and clones of a store.
pub fn tokens_strictly_increase_across_names_and_clones<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let clone = locks.clone();
        let mut last = 0;
        for i in 0..50 {
            let store = if i % 2 == 0 { &locks } else { &clone };
            let name = format!("n{}", i % 7);
            let lock = store.try_lock(&name, "o", TTL).await.unwrap().unwrap();
            assert!(lock.token() > last);
            last = lock.token();
            assert!(lock.release().await.unwrap());
        }
    });
}

/// Validation errors are the core's, before any round trip (a dead server's store too).
pub fn validation_errors_are_the_cores_and_need_no_server<F: Fixture>(f: &F) {
    let mut server = f.start_server(F::FAULT_PORTS[ports::DEAD]);
    run(async {
        let limits = Config::default().with_max_name_len(8).with_max_owner_len(4);
        let registry = LockRegistry::with_config(ManualClock::new(), limits);
        let common = CommonConfig::new()
            .with_max_name_len(8)
            .with_max_owner_len(4);
        let locks = store_with(f, common).await;
        let dead = store_at(f, &server.url(), &fresh_scope(), common).await;
        server.kill();
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
            let checked = check_request(name, owner, ttl, &limits).unwrap_err();
            assert_eq!(checked, expected);
            assert_eq!(
                locks.try_lock(name, owner, ttl).await.unwrap_err(),
                expected
            );
            assert_eq!(dead.try_lock(name, owner, ttl).await.unwrap_err(), expected);
            assert_eq!(locks.acquire(name, owner, ttl).await.unwrap_err(), expected);
            let generic = LockStore::try_lock(&locks, name, owner, ttl).await;
            assert_eq!(generic.unwrap_err(), expected);
        }
        assert!(locks.holder("alk:x").await.unwrap().is_none());
        assert!(dead.holder("").await.unwrap().is_none(), "no round trip");
        assert!(matches!(
            dead.try_lock("ok", "o", TTL).await,
            Err(LockError::Unavailable { .. })
        ));
    });
}

/// Waiters are served in arrival order, handed the lease inside the release; no barging.
pub fn waiters_are_served_in_order_with_hand_off_and_no_barging<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let first = locks.try_lock("q", "holder", TTL).await.unwrap().unwrap();
        let mut waiting = Vec::new();
        for i in 0..4 {
            let store = locks.clone();
            waiting.push(tokio::spawn(async move {
                let owner = format!("w{i}");
                let lock = store.acquire("q", &owner, TTL).await.unwrap().unwrap();
                let token = lock.token();
                tokio::time::sleep(ms(20)).await;
                assert!(lock.release().await.unwrap());
                (i, token)
            }));
            // Let each queue before the next arrives.
            tokio::time::sleep(ms(50)).await;
        }
        assert!(first.release().await.unwrap());
        // Handed straight to w0: a try_lock in between finds it busy.
        assert_eq!(locks.holder("q").await.unwrap().unwrap().owner(), "w0");
        assert!(locks.try_lock("q", "barger", TTL).await.unwrap().is_none());
        let mut last = 0;
        for (expected, task) in waiting.into_iter().enumerate() {
            let (i, token) = task.await.unwrap();
            assert_eq!(i, expected);
            assert!(token > last);
            last = token;
        }
        assert!(locks.try_lock("q", "late", TTL).await.unwrap().is_some());
    });
}

/// The first waiter re-checks at the holder's deadline and takes a lease that lapsed.
pub fn a_waiter_takes_a_lease_that_lapses_at_its_deadline<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let held = locks
            .try_lock("lapse", "a", ms(300))
            .await
            .unwrap()
            .unwrap();
        let start = Instant::now();
        let lock = locks.acquire("lapse", "b", TTL).await.unwrap().unwrap();
        let took = start.elapsed();
        assert!(lock.token() > held.token());
        assert!(took < ms(400), "{took:?}");
        held.detach();
    });
}

/// Bounded waits end with `None` (zero waits at once) and leave the queue; the test clock
/// ends a wait too (it is on the server's timeline).
pub fn bounded_waits_end_with_none_and_leave_the_queue<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let held = locks.try_lock("b", "a", TTL).await.unwrap().unwrap();
        let zero = locks.acquire("b", "x", TTL).timeout(Duration::ZERO).await;
        assert!(zero.unwrap().is_none());
        let start = Instant::now();
        let waited = locks.acquire("b", "y", TTL).timeout(ms(200)).await.unwrap();
        assert!(waited.is_none());
        assert!(start.elapsed() >= ms(190) && start.elapsed() < ms(600));
        let store2 = locks.clone();
        let long = tokio::spawn(async move {
            let wait = Duration::from_secs(3600);
            store2.acquire("b", "z", TTL).timeout(wait).await
        });
        tokio::time::sleep(ms(100)).await;
        locks
            .advance_test_clock(Duration::from_secs(3600))
            .await
            .unwrap();
        let out = tokio::time::timeout(Duration::from_secs(2), long).await;
        drop(out.unwrap().unwrap().unwrap());
        drop(held);
    });
}

/// A dropped waiter leaves the queue, and the next one is served.
pub fn a_dropped_waiter_leaves_the_queue_and_passes_on_a_handed_lease<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let held = locks.try_lock("d", "a", TTL).await.unwrap().unwrap();
        let store2 = locks.clone();
        let dropped = tokio::spawn(async move { store2.acquire("d", "dropped", TTL).await });
        tokio::time::sleep(ms(50)).await;
        let store3 = locks.clone();
        let next = tokio::spawn(async move { store3.acquire("d", "next", TTL).await });
        tokio::time::sleep(ms(50)).await;
        dropped.abort();
        let _ = dropped.await;
        tokio::time::sleep(ms(50)).await;
        assert!(held.release().await.unwrap());
        let lock = tokio::time::timeout(Duration::from_secs(2), next).await;
        assert_eq!(lock.unwrap().unwrap().unwrap().unwrap().owner(), "next");
    });
}

/// Dropping a handle releases its lease; a detached one stays.
pub fn dropping_a_handle_releases_it<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let lock = locks.try_lock("drop", "a", TTL).await.unwrap().unwrap();
        drop(lock);
        let wait = Duration::from_secs(2);
        let waited = locks.acquire("drop", "b", TTL).timeout(wait).await.unwrap();
        let detached = waited.expect("released by the drop");
        let token = detached.token();
        detached.detach();
        tokio::time::sleep(ms(50)).await;
        assert_eq!(locks.holder("drop").await.unwrap().unwrap().token(), token);
    });
}

/// keep_alive renews; lapsed resolves once the lease is lost, with why.
pub fn keep_alive_renews_and_lapsed_resolves_when_lost<F: Fixture>(f: &F) {
    run(async {
        // keep_alive needs a ttl of twice the io_timeout: a 300 ms lease, a 150 ms io_timeout.
        let locks = store_with(f, io(ms(150))).await;
        let lock = locks.try_lock("k", "a", ms(300)).await.unwrap().unwrap();
        let token = lock.token();
        let alive = tokio::time::timeout(ms(1000), lock.keep_alive(ms(100))).await;
        assert!(alive.is_err(), "still renewing after 1 s of a 300 ms ttl");
        assert_eq!(locks.holder("k").await.unwrap().unwrap().token(), token);
        let start = Instant::now();
        let why = lock.lapsed().await;
        let took = start.elapsed();
        assert!(
            matches!(why, LockError::Expired { token: t, .. } if t == token),
            "{why:?}"
        );
        assert!(took >= ms(150) && took < ms(500), "{took:?}");
        assert!(matches!(
            lock.keep_alive(Duration::ZERO).await,
            LockError::Expired { .. }
        ));
    });
}

/// keep_alive refuses at once a ttl below twice the io_timeout; so does with_lock.
pub fn keep_alive_refuses_a_ttl_its_io_timeout_cannot_renew_in_time<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let lock = locks
            .try_lock("short", "a", ms(300))
            .await
            .unwrap()
            .unwrap();
        let refused = tokio::time::timeout(Duration::from_secs(5), lock.keep_alive(Duration::ZERO))
            .await
            .expect("refused at once, not after the lease");
        let io_timeout = Duration::from_secs(2);
        assert_eq!(
            refused,
            LockError::InvalidTtl {
                ttl: ms(300),
                problem: alkstore_mem::TtlProblem::TooShortToKeepAlive { io_timeout },
            }
        );
        assert!(
            lock.is_held().await.unwrap(),
            "the lease itself is untouched"
        );
        drop(lock);
        let options = alkstore_mem::LockOptions::ttl(ms(300)).keep_alive(Duration::ZERO);
        let ran = alkstore_mem::with_lock(&locks, "short", "b", options, |_| async {}).await;
        assert!(matches!(ran, Err(LockError::InvalidTtl { .. })), "{ran:?}");
    });
}

/// Two scopes never meet; one scope is shared by its stores.
pub fn scopes_do_not_meet<F: Fixture>(f: &F) {
    run(async {
        let (a, b) = (store(f).await, store(f).await);
        let _la = a.try_lock("same", "x", TTL).await.unwrap().unwrap();
        let _lb = b.try_lock("same", "y", TTL).await.unwrap().unwrap();
        let scope = fresh_scope();
        let one = store_at(f, &f.url(), &scope, CommonConfig::new()).await;
        let two = store_at(f, &f.url(), &scope, CommonConfig::new()).await;
        let _held = one.try_lock("same", "x", TTL).await.unwrap().unwrap();
        assert!(two.try_lock("same", "y", TTL).await.unwrap().is_none());
        assert!(format!("{a:?}").contains(<F::Engine as Protocol>::NAME));
    });
}

/// Code written against `LockStore` runs unchanged.
pub fn generic_code_runs_unchanged<F: Fixture>(f: &F) {
    async fn nightly<S: LockStore>(store: &S) -> Result<Option<u64>, LockError> {
        let Some(lock) = store.try_lock("nightly", "host-1", TTL).await? else {
            return Ok(None);
        };
        let token = lock.token();
        lock.release().await?;
        Ok(Some(token))
    }
    run(async {
        let locks = store(f).await;
        assert!(nightly(&locks).await.unwrap().is_some());
        let registry = LockRegistry::new(ManualClock::new());
        assert_eq!(nightly(&registry).await.unwrap(), Some(1));
    });
}

/// Stores are `Clone + Debug + Send + Sync`; handles and waits are `Send + 'static`.
pub fn stores_are_clone_debug_send_sync<F: Fixture>(_: &F) {
    fn check<T: Clone + std::fmt::Debug + Send + Sync + 'static>() {}
    fn send<T: Send + 'static>() {}
    check::<Store<F>>();
    send::<alkstore_kit::Lock<F::Engine>>();
    send::<alkstore_kit::Acquire<F::Engine>>();
}

/// Every future is a named `Send` type that a user can keep in a struct.
pub fn every_future_is_a_named_send_type<F: Fixture>(f: &F) {
    use alkstore_kit::{Acquire, KeepAliveFuture, LapsedFuture, Lock, RemoteFuture};
    fn send_static<T: Send + 'static>(_: &T) {}
    struct Guard<'a> {
        alive: KeepAliveFuture<'a>,
        lapsed: LapsedFuture<'a>,
        held: RemoteFuture<'a, bool>,
    }
    run(async {
        let locks = store_with(f, io(ms(500))).await;
        let acquire: Acquire<F::Engine> = locks.acquire("named", "a", Duration::from_secs(5));
        send_static(&acquire);
        let lock: Lock<F::Engine> = acquire.await.unwrap().unwrap();
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
                () = tokio::time::sleep(ms(200)) => {}
            }
        }
        let release: RemoteFuture<'static, bool> = lock.release();
        send_static(&release);
        assert!(tokio::spawn(release).await.unwrap().unwrap());
    });
}
