//! Hostile review of the Redis engine, on servers of the tests' own (killed by pid when
//! done): a frozen Redis under keep_alive, a user without pub/sub permission, FLUSHALL and
//! tokens. `make test-redis` runs it.

mod common;

use std::time::{Duration, Instant};

use alkstore_redis::RedisLocks;
use common::{RedisServer, runtime};

// ---------------------------------------------------------------------------------------------
// 1. keep_alive / lapsed under a frozen Redis: the user must learn of the loss by the deadline.
// ---------------------------------------------------------------------------------------------

#[test]
fn keep_alive_returns_before_the_servers_deadline_when_redis_freezes() {
    let _serial = PRIVATE_6398.lock().unwrap_or_else(|e| e.into_inner());
    let server = RedisServer::start(6398);
    runtime().block_on(async {
        // Default io_timeout (2 s), a 1 s lease renewed every 250 ms.
        let locks = RedisLocks::connect(&server.url()).await.unwrap();
        let ttl = Duration::from_secs(1);
        let every = Duration::from_millis(250);
        let lock = locks.try_lock("ka", "a", ttl).await.unwrap().unwrap();
        let start = Instant::now();
        let other = locks.try_lock("lp", "a", ttl).await.unwrap().unwrap();
        let lapsed = tokio::spawn(async move {
            other.lapsed().await;
            start.elapsed()
        });
        let pid_pause = std::thread::spawn({
            let port = server.port;
            move || {
                std::thread::sleep(Duration::from_millis(400));
                port
            }
        });
        // Pause from the test thread once 400 ms have passed (the keep_alive runs meanwhile).
        let paused = async {
            tokio::task::spawn_blocking(move || pid_pause.join().unwrap())
                .await
                .unwrap();
            server.pause();
            std::future::pending::<()>().await;
        };
        let err = tokio::select! {
            err = lock.keep_alive(every) => err,
            () = paused => unreachable!(),
        };
        // The server froze at ~400 ms; the last renew it answered was at ~250 ms, so its
        // deadline is at most ~1.4 s after `start` (by the local clock).
        let returned = start.elapsed();
        let lapsed_at = tokio::time::timeout(Duration::from_secs(5), lapsed)
            .await
            .unwrap()
            .unwrap();
        server.resume();
        eprintln!(
            "freeze: keep_alive returned {err:?} at {returned:?}; lapsed() at {lapsed_at:?}; \
             server-side deadline <= ~1.4 s / 1.0 s"
        );
        assert!(
            returned < Duration::from_millis(1400),
            "keep_alive returned only at {returned:?}, after the lease had lapsed on the server \
             (~1.4 s): the work raced against it ran unprotected"
        );
        assert!(
            lapsed_at < Duration::from_millis(1200),
            "lapsed() resolved at {lapsed_at:?}, long after the 1 s deadline"
        );
    });
}

// ---------------------------------------------------------------------------------------------
// 4. A user without pub/sub permission (Redis 7's default for new ACL users).
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_and_keep_alive_work_for_a_user_without_channel_permission() {
    let server = RedisServer::start(6399);
    // Redis 7: a new user gets `resetchannels` (acl-pubsub-default), i.e. no channel access.
    assert_eq!(
        server
            .cli(&["ACL", "SETUSER", "app", "on", ">pw", "~*", "+@all"])
            .trim(),
        "OK"
    );
    let url = format!("redis://app:pw@127.0.0.1:{}/", server.port);
    let locks = RedisLocks::connect(&url).await.unwrap();
    let lock = locks
        .try_lock("acl", "a", Duration::from_millis(1500))
        .await
        .unwrap()
        .unwrap();
    // keep_alive must keep a 1.5 s lease alive even so.
    let kept =
        tokio::time::timeout(Duration::from_millis(2500), lock.keep_alive(Duration::ZERO)).await;
    let held = lock.is_held().await.unwrap();
    eprintln!("no channel permission: keep_alive {kept:?}, still held: {held}");
    let start = Instant::now();
    let waited = locks
        .acquire("acl2", "w", Duration::from_secs(1))
        .timeout(Duration::from_secs(1))
        .await;
    eprintln!(
        "no channel permission: acquire on a free name -> {waited:?} after {:?}",
        start.elapsed()
    );
    assert!(held, "keep_alive let a 1.5 s lease lapse");
    match waited {
        Ok(Some(_)) => {}
        Ok(None) => panic!("a free name was not granted"),
        Err(err) => {
            let text = err.to_string();
            assert!(
                text.contains("NOPERM") || text.contains("permission"),
                "the error does not say why: {text}"
            );
            panic!("acquire needs pub/sub permission, and the docs do not say so: {text}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 10. FLUSHALL and tokens, on a server of our own.
// ---------------------------------------------------------------------------------------------

static PRIVATE_6398: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn tokens_keep_increasing_after_flushall_and_an_old_release_frees_nothing() {
    let _serial = PRIVATE_6398.lock().unwrap_or_else(|e| e.into_inner());
    let server = RedisServer::start(6398);
    runtime().block_on(async {
        let locks = RedisLocks::connect(&server.url()).await.unwrap();
        let mut last = 0;
        for _ in 0..200 {
            let l = locks
                .try_lock("f", "a", Duration::from_secs(5))
                .await
                .unwrap()
                .unwrap();
            assert!(l.token() > last);
            last = l.token();
            l.release().await.unwrap();
        }
        let old = locks
            .try_lock("f", "a", Duration::from_secs(5))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(server.cli(&["FLUSHALL"]).trim(), "OK");
        let new = locks
            .try_lock("f", "b", Duration::from_secs(5))
            .await
            .unwrap()
            .unwrap();
        eprintln!(
            "flushall: old token {}, new token {}",
            old.token(),
            new.token()
        );
        assert!(new.token() > old.token());
        assert!(!old.release().await.unwrap());
        assert_eq!(
            locks.holder("f").await.unwrap().unwrap().token(),
            new.token()
        );
        new.release().await.unwrap();
    });
}
