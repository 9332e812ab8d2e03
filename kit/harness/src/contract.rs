//! The contract on the shared server: exclusion, busy is `None`, renew and release rules,
//! tokens, FIFO hand-off, validation identical to the core's, and time on the server's clock
//! (moved by the engine's test clock).

use std::time::Duration;

use alkstore_kit::{CommonConfig, Protocol};
use alkstore_mem::{
    Config, LockError, LockHandle, LockRegistry, LockStore, ManualClock, validate::check_request,
};

use crate::fixture::{Fixture, Server, Store, ports};
use crate::support::{fresh_scope, io, run, store, store_at, store_with};

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
