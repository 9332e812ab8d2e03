//! Hostile review of the Redis engine's protocol, on the shared server (`make test-redis`):
//! secrets in messages, hostile names and their keys, replies lost after the script ran,
//! release marks.

mod common;

use std::time::{Duration, Instant};

use alkstore_mem::LockError;
use alkstore_redis::{RedisConfig, RedisLocks};
use common::{fresh_namespace, live_keys, namespace_keys, shared_cli, store, store_in, url};

// ---------------------------------------------------------------------------------------------
// 3. Secrets in error messages.
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn connect_errors_do_not_quote_the_password() {
    // Nothing listens on port 1.
    let err = RedisLocks::connect("redis://user:hunter2@127.0.0.1:1/")
        .await
        .unwrap_err();
    let text = format!("{err} / {err:?}");
    eprintln!("unreachable: {text}");
    let bad = RedisLocks::connect("redis://user:hunter2@127.0.0.1:notaport/")
        .await
        .unwrap_err();
    let bad_text = format!("{bad} / {bad:?}");
    eprintln!("malformed: {bad_text}");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(!bad_text.contains("hunter2"), "{bad_text}");
}

#[tokio::test]
async fn debug_output_does_not_quote_the_password() {
    let locks = store().await;
    let text = format!("{locks:?}");
    assert!(!text.contains("hunter2"), "{text}");
}

// ---------------------------------------------------------------------------------------------
// 7. Hostile names: no collisions, one hash tag, nothing left behind.
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn hostile_names_get_distinct_keys_under_one_hash_tag_and_leave_nothing() {
    let ns = fresh_namespace();
    let locks = store_in(ns.clone()).await;
    let long = "é".repeat(128); // 256 bytes
    let names: Vec<String> = [
        "a",
        "a}",
        "{a}",
        "}",
        "{",
        "a:b",
        "lock:a",
        "queue:a",
        "waiter:x",
        "token",
        "seq",
        "wake",
        "offset",
        "%",
        "%s%d",
        "[",
        "*",
        "?",
        ".*",
        "a b",
        "日本語",
        "🔒",
        "\u{200b}",
        "x\u{a0}y",
        "Alk",
        "alk",
        "alkx:",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([long.clone()])
    .collect();
    let mut held = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let owner = format!("own{i}\u{1F600}%{{}}");
        let lock = locks
            .try_lock(name, &owner, Duration::from_secs(30))
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{name:?} collided with an earlier name"));
        held.push(lock);
    }
    for (i, name) in names.iter().enumerate() {
        let h = locks.holder(name).await.unwrap().unwrap();
        assert_eq!(h.token(), held[i].token(), "{name:?}");
    }
    // Too long by one byte is refused; reserved prefixes too.
    let too_long = format!("{long}x");
    assert!(matches!(
        locks.try_lock(&too_long, "o", Duration::from_secs(1)).await,
        Err(LockError::InvalidName { .. })
    ));
    assert!(matches!(
        locks.try_lock("ALK:x", "o", Duration::from_secs(1)).await,
        Err(LockError::ReservedName { .. })
    ));
    let all = live_keys(&ns);
    assert_eq!(all.len(), names.len() + 1, "{all:?}"); // locks + token
    for k in &all {
        assert!(k.starts_with(&format!("{{{ns}}}:")), "{k}");
    }
    for lock in held {
        assert!(lock.release().await.unwrap());
    }
    assert_eq!(live_keys(&ns), vec![format!("{{{ns}}}:token")]);
}

// ---------------------------------------------------------------------------------------------
// 13. A reply lost after the server ran the script: the retry must answer as the first run.
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_lock_and_release_retried_after_a_lost_reply_answer_as_the_first_run() {
    let locks = store().await;
    locks.engine().lose_next_reply_for_test();
    let lock = locks
        .try_lock("lost", "a", Duration::from_secs(10))
        .await
        .unwrap()
        .expect("the retry finds its own lease and returns it, not busy");
    assert_eq!(
        locks.holder("lost").await.unwrap().unwrap().token(),
        lock.token()
    );
    // Another request is still refused.
    assert!(
        locks
            .try_lock("lost", "b", Duration::from_secs(10))
            .await
            .unwrap()
            .is_none()
    );
    locks.engine().lose_next_reply_for_test();
    assert!(
        lock.release().await.unwrap(),
        "the retried release must say the live lease was released"
    );
    assert!(locks.holder("lost").await.unwrap().is_none());
    // A lapsed lease stays `false` through a retry.
    let lapsing = locks
        .try_lock("lost", "c", Duration::from_secs(1))
        .await
        .unwrap()
        .unwrap();
    locks
        .advance_test_clock(Duration::from_secs(2))
        .await
        .unwrap();
    locks.engine().lose_next_reply_for_test();
    assert!(!lapsing.release().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_retried_after_a_lost_reply_returns_its_own_grant() {
    let ns = fresh_namespace();
    let locks = store_in(ns.clone()).await;
    // A direct grant whose reply is lost. (A retry that queued behind its own lease would
    // find it only at its next step, a heartbeat (1 s) later.) The subscriber is started
    // first: its wake-up of every sleeper once it listens would cover the delay.
    drop(
        locks
            .acquire("warm", "a", Duration::from_secs(1))
            .await
            .unwrap(),
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    locks.engine().lose_next_reply_for_test();
    let start = Instant::now();
    let direct = locks
        .acquire("lost", "a", Duration::from_secs(10))
        .await
        .unwrap()
        .unwrap();
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "the retried step queued behind its own lease: granted after {:?}",
        start.elapsed()
    );
    assert_eq!(
        locks.holder("lost").await.unwrap().unwrap().token(),
        direct.token()
    );
    // A pick-up of a hand-off whose reply is lost (the waiter has a store of its own).
    let waiting = store_in(ns.clone()).await;
    let waiter = {
        let waiting = waiting.clone();
        tokio::spawn(async move { waiting.acquire("lost", "w", Duration::from_secs(10)).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    waiting.engine().lose_next_reply_for_test();
    assert!(direct.release().await.unwrap());
    let start = Instant::now();
    let got = tokio::time::timeout(Duration::from_secs(3), waiter)
        .await
        .expect("the waiter is served")
        .unwrap()
        .unwrap()
        .expect("the retried pick-up returns the hand-off");
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "the retried pick-up queued behind its own lease: served after {:?}",
        start.elapsed()
    );
    assert_eq!(got.owner(), "w");
    assert_eq!(
        locks.holder("lost").await.unwrap().unwrap().token(),
        got.token()
    );
    assert!(got.release().await.unwrap());
    assert_eq!(
        live_keys(&ns),
        vec![format!("{{{ns}}}:seq"), format!("{{{ns}}}:token")]
    );
}

#[tokio::test]
async fn release_marks_expire() {
    let ns = fresh_namespace();
    let locks = RedisLocks::connect_with(
        &url(),
        RedisConfig::new()
            .with_namespace(&ns)
            .with_io_timeout(Duration::from_millis(200)),
    )
    .await
    .unwrap();
    let lock = locks
        .try_lock("m", "a", Duration::from_secs(10))
        .await
        .unwrap()
        .unwrap();
    assert!(lock.release().await.unwrap());
    assert_eq!(namespace_keys(&ns).len(), 2, "the token and one mark");
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(namespace_keys(&ns), vec![format!("{{{ns}}}:token")]);
}

// ---------------------------------------------------------------------------------------------
// Scripts the server does not have.
// ---------------------------------------------------------------------------------------------

/// A server that lost the engine's scripts (a restart, `SCRIPT FLUSH`) and does not let this
/// client `SCRIPT LOAD` them (an ACL): every call still runs, its script sent by EVAL. The same
/// path serves a Redis Cluster whose master was just killed: the client library's load went
/// to the masters it knew, EVALSHA on the promoted replica answered NOSCRIPT again, and a
/// waiter's step failed with `Unavailable` (the cluster suite, once, in a loaded `make test`).
#[tokio::test]
async fn scripts_run_by_source_where_they_cannot_be_loaded() {
    let user = format!("noload{}", std::process::id());
    let acl = [
        "ACL",
        "SETUSER",
        &user,
        "on",
        ">noload",
        "~*",
        "&*",
        "+@all",
        "-script|load",
    ];
    assert_eq!(shared_cli(&acl).trim(), "OK");
    let as_user = url().replacen("redis://", &format!("redis://{user}:noload@"), 1);
    let ns = fresh_namespace();
    let locks = RedisLocks::connect_with(&as_user, RedisConfig::new().with_namespace(ns))
        .await
        .expect("connects as a user who may not SCRIPT LOAD");
    let ttl = Duration::from_secs(30);
    assert_eq!(shared_cli(&["SCRIPT", "FLUSH"]).trim(), "OK");
    let lock = locks
        .try_lock("job", "a", ttl)
        .await
        .expect("try_lock runs without the script loaded")
        .expect("granted");
    assert_eq!(shared_cli(&["SCRIPT", "FLUSH"]).trim(), "OK");
    let holder = locks
        .holder("job")
        .await
        .expect("holder runs")
        .expect("held");
    assert_eq!((holder.owner(), holder.token()), ("a", lock.token()));
    assert_eq!(shared_cli(&["SCRIPT", "FLUSH"]).trim(), "OK");
    assert_eq!(lock.release().await, Ok(true));
    assert_eq!(shared_cli(&["SCRIPT", "FLUSH"]).trim(), "OK");
    assert!(locks.holder("job").await.expect("holder runs").is_none());
    shared_cli(&["ACL", "DELUSER", &user]);
}
