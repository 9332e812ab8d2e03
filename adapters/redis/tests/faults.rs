//! Faults, each on a dedicated redis-server this test starts (ports 6391-6394 and 6396; the
//! two tests on 6393 take turns) and kills by pid when done (also on panic): a holder process
//! killed with SIGKILL, Redis restarted without persistence, Redis paused with SIGSTOP,
//! connections killed with CLIENT KILL.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use alkstore_mem::LockError;
use alkstore_redis::{RedisConfig, RedisLocks};
use common::{RedisServer, runtime};

const TTL: Duration = Duration::from_secs(10);

/// Taken by the tests that run a server on 6393, one at a time.
static PORT_6393: Mutex<()> = Mutex::new(());

/// The children's entry point: does nothing in a normal run; with `ALKSTORE_CHILD=holder` it
/// takes a lease, prints `held <token> <deadline ns>` and sleeps until it is killed; with
/// `ALKSTORE_CHILD=waiter` it queues for a lease (100 ms heartbeat) until it is killed.
#[test]
fn child() {
    let Ok(role) = std::env::var("ALKSTORE_CHILD") else {
        return;
    };
    let url = std::env::var("ALKSTORE_CHILD_URL").unwrap();
    if role == "waiter" {
        // Queues for "cw" without a bound, says so, and waits until it is killed.
        let config = RedisConfig::new().with_waiter_heartbeat(Duration::from_millis(100));
        return runtime().block_on(async {
            let locks = RedisLocks::connect_with(&url, config).await.unwrap();
            let waiting = locks.acquire("cw", "crashing", TTL);
            tokio::pin!(waiting);
            tokio::select! {
                _ = &mut waiting => panic!("the lock is held by the parent"),
                () = tokio::time::sleep(Duration::from_millis(100)) => println!("queued"),
            }
            let _ = waiting.await;
        });
    }
    assert_eq!(role, "holder");
    let ttl = Duration::from_millis(
        std::env::var("ALKSTORE_CHILD_TTL_MS")
            .unwrap()
            .parse()
            .unwrap(),
    );
    runtime().block_on(async {
        let locks = RedisLocks::connect(&url).await.unwrap();
        let lock = locks.try_lock("k9", "doomed", ttl).await.unwrap().unwrap();
        println!("held {} {}", lock.token(), lock.deadline().as_nanos());
        tokio::time::sleep(Duration::from_secs(3600)).await;
        drop(lock);
    });
}

#[test]
fn a_killed_holders_lease_lapses_and_the_head_waiter_of_another_process_gets_it() {
    let server = RedisServer::start(6391);
    let ttl = Duration::from_millis(1000);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads=1", "-q"])
        .env("ALKSTORE_CHILD", "holder")
        .env("ALKSTORE_CHILD_URL", server.url())
        .env("ALKSTORE_CHILD_TTL_MS", ttl.as_millis().to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (token, deadline) = loop {
        let line = lines.next().expect("the child reports its lease").unwrap();
        if let Some(rest) = line.strip_prefix("held ") {
            let mut parts = rest.split(' ').map(|p| p.parse::<u64>().unwrap());
            break (parts.next().unwrap(), parts.next().unwrap());
        }
    };
    let reported = Instant::now();
    runtime().block_on(async {
        let locks = RedisLocks::connect(&server.url()).await.unwrap();
        let waiter = {
            let locks = locks.clone();
            tokio::spawn(async move { locks.acquire("k9", "heir", TTL).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let lock = waiter.await.unwrap().unwrap().unwrap();
        let took = reported.elapsed();
        // On the server's clock: granted this long after the dead lease's deadline.
        let granted_at = lock.deadline().as_nanos() - TTL.as_nanos() as u64;
        let late = Duration::from_nanos(granted_at.saturating_sub(deadline));
        eprintln!("kill -9: the waiter got the lease {took:?} after the grant was reported, {late:?} after its deadline");
        assert!(lock.token() > token);
        assert!(granted_at >= deadline, "never before the dead lease's deadline");
        assert!(took <= ttl + Duration::from_millis(100), "{took:?}");
        assert!(late <= Duration::from_millis(100), "{late:?}");
    });
}

#[test]
fn a_restart_without_persistence_keeps_tokens_increasing_and_the_store_recovers() {
    let mut server = RedisServer::start(6392);
    let io = Duration::from_millis(500);
    runtime().block_on(async {
        let locks = RedisLocks::connect_with(&server.url(), RedisConfig::new().with_io_timeout(io))
            .await
            .unwrap();
        let mut before = 0;
        for i in 0..20 {
            let lock = locks
                .try_lock(&format!("r{i}"), "a", TTL)
                .await
                .unwrap()
                .unwrap();
            before = before.max(lock.token());
            if i % 2 == 0 {
                lock.release().await.unwrap();
            } else {
                lock.detach();
            }
        }
        let mut held = locks.try_lock("kept", "a", TTL).await.unwrap().unwrap();
        server.kill();
        // During the outage: Unavailable, promptly, and nothing believed held.
        for _ in 0..3 {
            let start = Instant::now();
            let err = locks.try_lock("r0", "b", TTL).await.unwrap_err();
            assert!(matches!(err, LockError::Unavailable { .. }), "{err:?}");
            assert!(
                start.elapsed() <= io + Duration::from_millis(100),
                "{:?}",
                start.elapsed()
            );
            eprintln!(
                "restart: during the outage: {err} after {:?}",
                start.elapsed()
            );
            assert!(matches!(
                locks.holder("r0").await,
                Err(LockError::Unavailable { .. })
            ));
            assert!(matches!(
                held.renew(TTL).await,
                Err(LockError::Unavailable { .. })
            ));
        }
        server.launch();
        // After: the same store works again, with larger tokens (the data is gone).
        let start = Instant::now();
        let lock = loop {
            match locks.try_lock("r0", "b", TTL).await {
                Ok(lock) => break lock.unwrap(),
                Err(err) => {
                    assert!(start.elapsed() < Duration::from_secs(3), "still {err}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        };
        eprintln!(
            "restart: first success {:?} after the server was back",
            start.elapsed()
        );
        assert!(lock.token() > before, "{} > {before}", lock.token());
        // The lease held before the restart is gone with the data: renew says so.
        assert!(matches!(
            held.renew(TTL).await,
            Err(LockError::Expired { .. })
        ));
        let waited = locks
            .acquire("r1", "c", TTL)
            .timeout(Duration::from_secs(1))
            .await
            .unwrap();
        assert!(waited.unwrap().token() > lock.token());
    });
}

#[test]
fn a_paused_server_gives_unavailable_within_the_io_timeout() {
    let _turn = PORT_6393.lock().unwrap_or_else(PoisonError::into_inner);
    let server = RedisServer::start(6393);
    let io = Duration::from_millis(400);
    runtime().block_on(async {
        let locks = RedisLocks::connect_with(&server.url(), RedisConfig::new().with_io_timeout(io))
            .await
            .unwrap();
        let mut lock = locks.try_lock("p", "a", TTL).await.unwrap().unwrap();
        let waiter = {
            let locks = locks.clone();
            tokio::spawn(async move { locks.acquire("p", "w", TTL).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        server.pause();
        let mut worst = Duration::ZERO;
        for _ in 0..2 {
            let start = Instant::now();
            let err = locks.try_lock("q", "b", TTL).await.unwrap_err();
            assert!(matches!(err, LockError::Unavailable { .. }), "{err:?}");
            worst = worst.max(start.elapsed());
            let start = Instant::now();
            assert!(matches!(
                lock.renew(TTL).await,
                Err(LockError::Unavailable { .. })
            ));
            worst = worst.max(start.elapsed());
            let start = Instant::now();
            assert!(matches!(
                locks.holder("p").await,
                Err(LockError::Unavailable { .. })
            ));
            worst = worst.max(start.elapsed());
        }
        eprintln!("SIGSTOP: calls returned Unavailable within {worst:?} (io_timeout {io:?})");
        assert!(worst <= io + Duration::from_millis(100), "{worst:?}");
        server.resume();
        let start = Instant::now();
        loop {
            match lock.renew(TTL).await {
                Ok(()) => break,
                Err(err) => {
                    assert!(start.elapsed() < Duration::from_secs(3), "still {err}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
        eprintln!(
            "SIGSTOP: renew succeeded {:?} after SIGCONT",
            start.elapsed()
        );
        // The waiter's heartbeat step may have failed while the server was paused (then it
        // ended with Unavailable); if it survived, a release hands it the lease.
        assert!(lock.release().await.unwrap());
        match tokio::time::timeout(Duration::from_secs(3), waiter)
            .await
            .unwrap()
            .unwrap()
        {
            Ok(got) => assert_eq!(got.unwrap().owner(), "w"),
            Err(err) => assert!(matches!(err, LockError::Unavailable { .. }), "{err:?}"),
        }
        // A call that timed out may still run once the server resumes (it was in the socket):
        // "q" may be held now by a lease nobody has a handle to; it lapses at its deadline.
        // That is the documented cost of a timeout; no handle believes it holds a lease.
        let late = locks.holder("q").await.unwrap();
        eprintln!(
            "SIGSTOP: a timed-out try_lock ran after SIGCONT: {}",
            late.is_some()
        );
        assert!(locks.try_lock("fresh", "b", TTL).await.unwrap().is_some());
    });
}

/// Waits for "s" (held) with `wait` on `locks` while `server` is frozen (SIGSTOP) from
/// `from` after the wait starts (before its first poll when zero) for `stall`; returns how
/// long the wait took and its outcome.
fn wait_through_a_stall(
    server: &RedisServer,
    locks: &RedisLocks,
    wait: Duration,
    (from, stall): (Duration, Duration),
) -> (
    Duration,
    Result<Option<alkstore_redis::RedisLock>, LockError>,
) {
    let rt = runtime();
    if from.is_zero() {
        server.pause();
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            if !from.is_zero() {
                std::thread::sleep(from);
                server.pause();
            }
            std::thread::sleep(stall);
            server.resume();
        });
        rt.block_on(async {
            let start = Instant::now();
            let got = locks.acquire("s", "w", TTL).timeout(wait).await;
            (start.elapsed(), got)
        })
    })
}

#[test]
fn a_bounded_wait_counts_from_its_first_poll_and_ends_within_wait_plus_io_timeout_while_redis_is_frozen()
 {
    let _turn = PORT_6393.lock().unwrap_or_else(PoisonError::into_inner);
    let server = RedisServer::start(6393);
    let rt = runtime();
    let connect = |io| {
        rt.block_on(RedisLocks::connect_with(
            &server.url(),
            RedisConfig::new().with_io_timeout(io),
        ))
        .unwrap()
    };
    let (patient, hasty) = (
        connect(Duration::from_secs(3)),
        connect(Duration::from_millis(500)),
    );
    let holder = rt
        .block_on(patient.try_lock("s", "holder", TTL))
        .unwrap()
        .unwrap();

    // A stall shorter than the wait, from the start: the wait still ends `wait` after its
    // first poll (it used to count from the first step that reached the server, 1.2 s later).
    let (wait, stall) = (Duration::from_secs(2), Duration::from_millis(1200));
    let (took, got) = wait_through_a_stall(&server, &patient, wait, (Duration::ZERO, stall));
    eprintln!("SIGSTOP {stall:?} from the start of a {wait:?} wait: resolved after {took:?}");
    assert!(matches!(got, Ok(None)), "{got:?}");
    assert!(took >= wait, "{took:?}: ended early");
    assert!(
        took < wait + Duration::from_millis(600),
        "{took:?}: the stall pushed the end out"
    );

    // A stall longer than the wait, from the start: the answer that comes back ends it.
    let (wait, stall) = (Duration::from_millis(300), Duration::from_millis(1500));
    let (took, got) = wait_through_a_stall(&server, &patient, wait, (Duration::ZERO, stall));
    eprintln!("SIGSTOP {stall:?} from the start of a {wait:?} wait (io_timeout 3s): {took:?}");
    assert!(matches!(got, Ok(None)), "{got:?}");
    assert!(took <= wait + Duration::from_secs(3), "{took:?}");

    // Queued, then a stall longer than wait + io_timeout: the last step gets no answer, and
    // the wait ends at wait + io_timeout all the same, saying Redis did not answer.
    let (wait, io) = (Duration::from_millis(300), Duration::from_millis(500));
    let stall = (Duration::from_millis(100), Duration::from_millis(1500));
    let (took, got) = wait_through_a_stall(&server, &hasty, wait, stall);
    eprintln!(
        "SIGSTOP for {:?}, {:?} into a {wait:?} wait (io_timeout {io:?}): {got:?} after {took:?}",
        stall.1, stall.0
    );
    assert!(matches!(got, Err(LockError::Unavailable { .. })), "{got:?}");
    assert!(took <= wait + io + Duration::from_millis(100), "{took:?}");

    // A zero wait answers as try_lock does: Unavailable within the io_timeout.
    let stall = (Duration::ZERO, Duration::from_millis(1000));
    let (took, got) = wait_through_a_stall(&server, &hasty, Duration::ZERO, stall);
    eprintln!("SIGSTOP during a zero wait (io_timeout {io:?}): {got:?} after {took:?}");
    assert!(matches!(got, Err(LockError::Unavailable { .. })), "{got:?}");
    assert!(took <= io + Duration::from_millis(100), "{took:?}");

    // The server works on: the holder's lease is still there, and releases.
    assert!(rt.block_on(holder.release()).unwrap());
}

#[test]
fn a_waiter_whose_connections_are_killed_still_gets_the_lease() {
    let server = RedisServer::start(6394);
    runtime().block_on(async {
        let holder = RedisLocks::connect(&server.url()).await.unwrap();
        let waiting = RedisLocks::connect(&server.url()).await.unwrap();
        let lock = holder.try_lock("ck", "a", TTL).await.unwrap().unwrap();
        let waiter = {
            let waiting = waiting.clone();
            tokio::spawn(async move { waiting.acquire("ck", "w", TTL).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        // Both the subscriber and the command connections of every client.
        let killed_pubsub = server.cli(&["CLIENT", "KILL", "TYPE", "pubsub"]);
        let killed_normal = server.cli(&["CLIENT", "KILL", "TYPE", "normal"]);
        eprintln!(
            "CLIENT KILL: pubsub {}, normal {}",
            killed_pubsub.trim(),
            killed_normal.trim()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        let start = Instant::now();
        assert!(lock.release().await.unwrap());
        let got = tokio::time::timeout(Duration::from_secs(3), waiter)
            .await
            .expect("the waiter is served")
            .unwrap()
            .unwrap()
            .unwrap();
        eprintln!(
            "CLIENT KILL: the waiter got the lease {:?} after the release",
            start.elapsed()
        );
        assert_eq!(got.owner(), "w");
        assert!(start.elapsed() < Duration::from_millis(1500));
    });
}

#[test]
fn a_crashed_unbounded_waiter_is_skipped_once_its_heartbeat_expires() {
    let server = RedisServer::start(6396);
    runtime().block_on(async {
        let locks = RedisLocks::connect(&server.url()).await.unwrap();
        let lock = locks.try_lock("cw", "holder", TTL).await.unwrap().unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child", "--nocapture", "--test-threads=1", "-q"])
            .env("ALKSTORE_CHILD", "waiter")
            .env("ALKSTORE_CHILD_URL", server.url())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        while lines.next().expect("the child queues").unwrap() != "queued" {}
        // Queued behind the child, with the default heartbeat.
        let waiter = {
            let locks = locks.clone();
            tokio::spawn(async move { locks.acquire("cw", "survivor", TTL).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        child.kill().unwrap();
        child.wait().unwrap();
        let killed = Instant::now();
        assert!(lock.release().await.unwrap());
        // The lease may go to the dead child first (its entry was fresh): a hand-off nobody
        // picked up. Once the child's heartbeat has expired (3 x 100 ms), the survivor's next
        // step (at its 1 s heartbeat at the latest) finds it so and takes the name.
        let got = tokio::time::timeout(Duration::from_secs(3), waiter)
            .await
            .expect("the survivor is served")
            .unwrap()
            .unwrap()
            .unwrap();
        let took = killed.elapsed();
        eprintln!("crashed waiter: the next waiter got the lease {took:?} after the kill");
        assert_eq!(got.owner(), "survivor");
        assert!(took < Duration::from_millis(1500), "{took:?}");
    });
}
