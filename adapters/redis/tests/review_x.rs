//! Hostile review of the Redis engine. Run with
//! `scripts/redis-run.sh --port 6397 -- cargo test -p alkstore-redis --test review_x`.
//! Fault tests start their own servers on 6398 and 6399 (killed by pid when done).

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use alkstore_mem::LockError;
use alkstore_redis::{RedisConfig, RedisLocks};
use common::{RedisServer, fresh_namespace, runtime, store, url};

fn cli(url: &str, args: &[&str]) -> String {
    let port = url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    let out = Command::new("redis-cli")
        .args(["-p", &port])
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The keys of namespace `ns` on the shared scratch server, sorted, without the short-lived
/// marks of releases (`{ns}:released:<rid>`, gone after max(2 x io_timeout, 1 s); see
/// `release_marks_expire`).
fn keys(ns: &str) -> Vec<String> {
    let mut keys = all_keys(ns);
    keys.retain(|k| !k.starts_with(&format!("{{{ns}}}:released:")));
    keys
}

/// Every key of namespace `ns`, sorted.
fn all_keys(ns: &str) -> Vec<String> {
    let mut keys: Vec<String> = cli(&url(), &["--scan", "--pattern", &format!("{{{ns}}}:*")])
        .lines()
        .map(str::to_owned)
        .filter(|k| !k.is_empty())
        .collect();
    keys.sort();
    keys
}

async fn connect(ns: &str) -> RedisLocks {
    RedisLocks::connect_with(&url(), RedisConfig::new().with_namespace(ns))
        .await
        .unwrap()
}

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
// 2. A handed-off lease that lapsed (and was re-granted) before its waiter picked it up.
// ---------------------------------------------------------------------------------------------

#[test]
fn acquire_never_returns_a_handed_lease_that_already_lapsed_and_was_granted_to_another() {
    let ns = fresh_namespace();
    let rt = runtime();
    let holder_store = rt.block_on(connect(&ns));
    let holder = rt
        .block_on(holder_store.try_lock("stale", "holder", Duration::from_secs(10)))
        .unwrap()
        .unwrap();
    // Waiter A lives on a current-thread runtime of its own thread, which then stalls for
    // 1.5 s (a GC pause, a blocking call on the runtime, a busy executor).
    let ns2 = ns.clone();
    let waiter = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let store = connect(&ns2).await;
            let task = tokio::spawn(async move {
                store
                    .acquire("stale", "A", Duration::from_millis(200))
                    .await
            });
            tokio::time::sleep(Duration::from_millis(300)).await;
            std::thread::sleep(Duration::from_millis(1500)); // the runtime stalls
            task.await.unwrap()
        })
    });
    rt.block_on(async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        // A is queued; the release hands it the lease for 200 ms.
        assert!(holder.release().await.unwrap());
        tokio::time::sleep(Duration::from_millis(500)).await;
        // A never picked it up, and its 200 ms are over: B takes the name.
        let b = holder_store
            .try_lock("stale", "B", Duration::from_secs(10))
            .await
            .unwrap()
            .expect("the hand-off to A lapsed, so the name is free");
        // B gives the name up once A's runtime runs again (~1.8 s): A, back at the head of the
        // queue, is handed a new lease then. (Held until the join, B would keep A waiting for
        // its whole 10 s.)
        let b_token = b.token();
        let releaser = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1300)).await;
            b.release().await.unwrap()
        });
        let got = waiter.join().unwrap().unwrap();
        assert!(releaser.await.unwrap(), "B held the name until its release");
        let a = got.expect("A waits without bound, so it gets the name after B");
        eprintln!(
            "stale hand-off: A got token {} (deadline {:?}) after B's token {b_token}",
            a.token(),
            a.deadline(),
        );
        // A stale pickup would return the lapsed hand-off's token, older than B's.
        assert!(
            a.token() > b_token,
            "acquire resolved to Ok(Some(lock)) for A with the lapsed hand-off (token {}) \
             although B was granted the name after it (token {b_token}): two handles \
             believed they held it",
            a.token()
        );
        drop(a);
    });
}

#[test]
fn a_bounded_waiter_whose_hand_off_lapsed_resolves_to_none_and_leaves_no_entry() {
    let ns = fresh_namespace();
    let rt = runtime();
    let holder_store = rt.block_on(connect(&ns));
    let holder = rt
        .block_on(holder_store.try_lock("stale", "holder", Duration::from_secs(10)))
        .unwrap()
        .unwrap();
    // As above, but A's wait is bounded to 1 s: when its runtime runs again (~1.8 s) the
    // hand-off has lapsed and so has its wait.
    let ns2 = ns.clone();
    let waiter = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let store = connect(&ns2).await;
            let task = tokio::spawn(async move {
                store
                    .acquire("stale", "A", Duration::from_millis(200))
                    .timeout(Duration::from_secs(1))
                    .await
            });
            tokio::time::sleep(Duration::from_millis(300)).await;
            std::thread::sleep(Duration::from_millis(1500)); // the runtime stalls
            task.await.unwrap()
        })
    });
    rt.block_on(async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(holder.release().await.unwrap());
        tokio::time::sleep(Duration::from_millis(500)).await;
        let b = holder_store
            .try_lock("stale", "B", Duration::from_secs(10))
            .await
            .unwrap()
            .expect("the hand-off to A lapsed, so the name is free");
        let got = waiter.join().unwrap().unwrap();
        assert!(got.is_none(), "A got {got:?}: a lapsed hand-off");
        assert_eq!(
            holder_store.holder("stale").await.unwrap().unwrap().token(),
            b.token()
        );
        assert!(b.release().await.unwrap());
        let left = keys(&ns);
        assert_eq!(
            left,
            vec![format!("{{{ns}}}:seq"), format!("{{{ns}}}:token")],
            "the stale waiter entry (or the queue) was left behind"
        );
    });
}

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

// 5. (Moved to the kit harness: waiting.rs.)

// ---------------------------------------------------------------------------------------------
// 6. Cancel-safety: waiters dropped at every point leave no entry and no stranded lease.
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_waiters_leave_no_keys_and_no_stranded_lease() {
    let ns = fresh_namespace();
    let locks = connect(&ns).await;
    for round in 0..40u64 {
        // Cancels of the last round run in spawned tasks: wait for them (bounded).
        let holder = locks
            .acquire("c", "h", Duration::from_secs(10))
            .timeout(Duration::from_secs(2))
            .await
            .unwrap()
            .unwrap_or_else(|| {
                let dump = cli(&url(), &["HGETALL", &format!("{{{ns}}}:lock:c")]);
                let q = cli(&url(), &["ZRANGE", &format!("{{{ns}}}:queue:c"), "0", "-1"]);
                let k = all_keys(&ns);
                panic!(
                    "round {round}: the name stayed taken for 2 s: {dump:?} queue {q:?} keys {k:?}"
                )
            });
        let mut waiters = Vec::new();
        for w in 0..4 {
            let locks = locks.clone();
            waiters.push(tokio::spawn(async move {
                let got = locks
                    .acquire("c", &format!("w{w}"), Duration::from_secs(10))
                    .await;
                // Release at once inside the task (a lease returned after the abort was
                // requested is released here, not stranded).
                match got {
                    Ok(Some(lock)) => {
                        let (token, owner) = (lock.token(), lock.owner().to_owned());
                        let released = lock.release().await.unwrap();
                        assert!(released, "acquire gave {owner} token {token}, not held");
                        Ok(true)
                    }
                    Ok(None) => Ok(false),
                    Err(e) => Err(e),
                }
            }));
        }
        // Drop them (abort) at staggered points, some around the release.
        tokio::time::sleep(Duration::from_micros(round * 97 % 3000)).await;
        let release = {
            let locks = locks.clone();
            let _ = locks;
            tokio::spawn(holder.release())
        };
        for (i, w) in waiters.iter().enumerate() {
            if (round as usize + i) % 5 != 0 {
                tokio::time::sleep(Duration::from_micros(300 * i as u64)).await;
                w.abort();
            }
        }
        assert!(release.await.unwrap().unwrap());
        for w in waiters {
            match w.await {
                Ok(r) => {
                    r.unwrap();
                }
                Err(e) => assert!(e.is_cancelled(), "{e:?}"),
            }
        }
    }
    // Spawned cancels and drop-releases run: give them a moment.
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The name must be free at once (no lease stranded on a dropped waiter).
    let free = locks
        .try_lock("c", "end", Duration::from_secs(1))
        .await
        .unwrap();
    assert!(free.is_some(), "a lease was stranded on a dropped waiter");
    free.unwrap().release().await.unwrap();
    let left = keys(&ns);
    eprintln!("keys left: {left:?}");
    let expected: Vec<String> = vec![format!("{{{ns}}}:seq"), format!("{{{ns}}}:token")];
    assert_eq!(left, expected, "keys leak");
}

#[test]
fn a_waiter_dropped_outside_a_runtime_does_not_strand_the_lease_past_its_heartbeat() {
    let ns = fresh_namespace();
    let rt = runtime();
    let config = RedisConfig::new()
        .with_namespace(&ns)
        .with_waiter_heartbeat(Duration::from_millis(100));
    let locks = rt
        .block_on(RedisLocks::connect_with(&url(), config))
        .unwrap();
    let holder = rt
        .block_on(locks.try_lock("o", "h", Duration::from_secs(10)))
        .unwrap()
        .unwrap();
    let mut waiting = Box::pin(locks.acquire("o", "w", Duration::from_secs(10)));
    rt.block_on(async {
        let _ = tokio::time::timeout(Duration::from_millis(200), &mut waiting).await;
    });
    // Dropped on a thread with no runtime: no panic; the withdrawal runs on a helper thread
    // (see leftovers.rs for the queue checked right after the drop).
    std::thread::spawn(move || drop(waiting)).join().unwrap();
    rt.block_on(async {
        assert!(holder.release().await.unwrap());
        tokio::time::sleep(Duration::from_millis(500)).await;
        let got = locks
            .try_lock("o", "x", Duration::from_secs(1))
            .await
            .unwrap();
        assert!(
            got.is_some(),
            "the lease handed to the dropped waiter is stranded"
        );
    });
}

// ---------------------------------------------------------------------------------------------
// 7. Hostile names: no collisions, one hash tag, nothing left behind.
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn hostile_names_get_distinct_keys_under_one_hash_tag_and_leave_nothing() {
    let ns = fresh_namespace();
    let locks = connect(&ns).await;
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
    let all = keys(&ns);
    assert_eq!(all.len(), names.len() + 1, "{all:?}"); // locks + token
    for k in &all {
        assert!(k.starts_with(&format!("{{{ns}}}:")), "{k}");
    }
    for lock in held {
        assert!(lock.release().await.unwrap());
    }
    assert_eq!(keys(&ns), vec![format!("{{{ns}}}:token")]);
}

// 8. (Moved to the kit harness: runtimes.rs.)

// 9. (Moved to the kit harness: runtimes.rs.)

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

// 11. (Moved to the kit harness: runtimes.rs.)

// ---------------------------------------------------------------------------------------------
// 12. A head waiter whose bounded wait ends tells the waiter behind it that it is first now.
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_waiter_learns_it_is_first_when_the_head_waiters_wait_ends() {
    let ns = fresh_namespace();
    let locks = connect(&ns).await;
    // B re-checks on its own only every 5 s (its heartbeat).
    let slow = RedisLocks::connect_with(
        &url(),
        RedisConfig::new()
            .with_namespace(&ns)
            .with_waiter_heartbeat(Duration::from_secs(5)),
    )
    .await
    .unwrap();
    let start = Instant::now();
    // A lease that lapses at 600 ms with nobody to release it.
    locks
        .try_lock("next", "h", Duration::from_millis(600))
        .await
        .unwrap()
        .unwrap()
        .detach();
    // A (first) gives up at 200 ms; B waits behind it without bound.
    let a = {
        let locks = locks.clone();
        tokio::spawn(async move {
            locks
                .acquire("next", "A", Duration::from_secs(5))
                .timeout(Duration::from_millis(200))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let b = tokio::spawn(async move { slow.acquire("next", "B", Duration::from_secs(5)).await });
    assert!(a.await.unwrap().unwrap().is_none());
    let got = b.await.unwrap().unwrap().unwrap();
    let took = start.elapsed();
    eprintln!("the next waiter got the lapsed lease after {took:?}");
    assert_eq!(got.owner(), "B");
    assert!(
        took < Duration::from_millis(2000),
        "B waited {took:?}: it slept a whole heartbeat instead of to the holder's deadline"
    );
    assert!(got.release().await.unwrap());
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
    let locks = connect(&ns).await;
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
    let waiting = connect(&ns).await;
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
        keys(&ns),
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
    assert_eq!(all_keys(&ns).len(), 2, "the token and one mark");
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(all_keys(&ns), vec![format!("{{{ns}}}:token")]);
}
