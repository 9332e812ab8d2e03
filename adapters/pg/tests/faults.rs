//! Faults, each on a throwaway cluster this test starts (ports 5441-5445) and stops when done
//! (also on panic): a holder process killed with SIGKILL, a waiter process killed with
//! SIGKILL, the engine's backends terminated with pg_terminate_backend, the server restarted
//! with waiters queued, the server paused with SIGSTOP.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use alkstore_mem::LockError;
use alkstore_pg::{PgConfig, PgLocks};
use common::{PgCluster, runtime};

const TTL: Duration = Duration::from_secs(10);

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
        let config = PgConfig::new().with_waiter_heartbeat(Duration::from_millis(100));
        return runtime().block_on(async {
            let locks = PgLocks::connect_with(&url, config).await.unwrap();
            let waiting = locks.acquire("cw", "crashing", TTL);
            tokio::pin!(waiting);
            tokio::select! {
                _ = &mut waiting => panic!("the lock is held by the parent"),
                () = tokio::time::sleep(Duration::from_millis(150)) => println!("queued"),
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
        let locks = PgLocks::connect(&url).await.unwrap();
        let lock = locks.try_lock("k9", "doomed", ttl).await.unwrap().unwrap();
        println!("held {} {}", lock.token(), lock.deadline().as_nanos());
        tokio::time::sleep(Duration::from_secs(3600)).await;
        drop(lock);
    });
}

fn spawn_child(role: &str, url: &str, ttl_ms: u64) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads=1", "-q"])
        .env("ALKSTORE_CHILD", role)
        .env("ALKSTORE_CHILD_URL", url)
        .env("ALKSTORE_CHILD_TTL_MS", ttl_ms.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_killed_holders_lease_lapses_and_the_head_waiter_of_another_process_gets_it() {
    let cluster = PgCluster::start(5441);
    let ttl = Duration::from_millis(1000);
    let mut child = spawn_child("holder", &cluster.url(), 1000);
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
        let locks = PgLocks::connect(&cluster.url()).await.unwrap();
        let waiter = {
            let locks = locks.clone();
            tokio::spawn(async move { locks.acquire("k9", "heir", TTL).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let lock = waiter.await.unwrap().unwrap().unwrap();
        let took = reported.elapsed();
        let granted_at = lock.deadline().as_nanos() - TTL.as_nanos() as u64;
        let late = Duration::from_nanos(granted_at.saturating_sub(deadline));
        eprintln!(
            "kill -9 of the holder: the waiter got the lease {took:?} after the grant was \
             reported (ttl {ttl:?}), {late:?} after its deadline on the server's clock"
        );
        assert!(lock.token() > token);
        assert!(
            granted_at >= deadline,
            "never before the dead lease's deadline"
        );
        assert!(took <= ttl + Duration::from_millis(100), "{took:?}");
        assert!(late <= Duration::from_millis(100), "{late:?}");
    });
}

#[test]
fn a_killed_waiter_is_skipped_once_its_heartbeat_lapses() {
    let cluster = PgCluster::start(5442);
    runtime().block_on(async {
        let locks = PgLocks::connect(&cluster.url()).await.unwrap();
        let lock = locks.try_lock("cw", "holder", TTL).await.unwrap().unwrap();
        let mut child = spawn_child("waiter", &cluster.url(), 0);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        while lines.next().expect("the child queues").unwrap() != "queued" {}
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
        // picks up. Once its heartbeat has lapsed (3 x 100 ms), the survivor's next step (at
        // its 1 s heartbeat at the latest) skips it and takes the name.
        let got = tokio::time::timeout(Duration::from_secs(3), waiter)
            .await
            .expect("the survivor is served")
            .unwrap()
            .unwrap()
            .unwrap();
        let took = killed.elapsed();
        eprintln!("kill -9 of a waiter: the next waiter got the lease {took:?} after the kill");
        assert_eq!(got.owner(), "survivor");
        assert!(took < Duration::from_millis(1500), "{took:?}");
    });
}

#[test]
fn terminated_backends_give_unavailable_at_most_and_the_store_recovers() {
    let cluster = PgCluster::start(5443);
    runtime().block_on(async {
        let holder = PgLocks::connect(&cluster.url()).await.unwrap();
        let waiting = PgLocks::connect(&cluster.url()).await.unwrap();
        let mut lock = holder.try_lock("t", "a", TTL).await.unwrap().unwrap();
        let waiter = {
            let waiting = waiting.clone();
            tokio::spawn(async move { waiting.acquire("t", "w", TTL).await })
        };
        tokio::time::sleep(Duration::from_millis(150)).await;
        let killed = cluster.psql(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE application_name = 'alkstore-pg'",
        );
        eprintln!(
            "pg_terminate_backend: {} backends of the engine",
            killed.trim()
        );
        assert!(killed.trim().parse::<u32>().unwrap() >= 3, "{killed}");
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Each call either works (a dead pooled connection is replaced before use) or is
        // Unavailable with a reason; a second try works.
        let start = Instant::now();
        let renewed = match lock.renew(TTL).await {
            Ok(()) => true,
            Err(LockError::Unavailable { reason }) => {
                eprintln!("pg_terminate_backend: renew: {reason}");
                lock.renew(TTL).await.unwrap();
                false
            }
            Err(other) => panic!("{other:?}"),
        };
        eprintln!("pg_terminate_backend: renew worked at the first try: {renewed}");
        assert!(lock.is_held().await.unwrap());
        assert!(lock.release().await.unwrap());
        // The waiter's listening connection was terminated too: it re-listens, and its
        // bounded re-check serves it anyway.
        match tokio::time::timeout(Duration::from_secs(3), waiter)
            .await
            .unwrap()
            .unwrap()
        {
            Ok(got) => {
                let got = got.unwrap();
                eprintln!(
                    "pg_terminate_backend: the waiter got the lease {:?} after the release",
                    start.elapsed()
                );
                assert_eq!(got.owner(), "w");
            }
            Err(err) => {
                eprintln!("pg_terminate_backend: the waiter ended with {err}");
                assert!(matches!(err, LockError::Unavailable { .. }), "{err:?}");
                let again = waiting
                    .acquire("t", "w", TTL)
                    .timeout(Duration::from_secs(2))
                    .await;
                assert!(again.unwrap().is_some());
            }
        }
        assert!(holder.try_lock("fresh", "b", TTL).await.unwrap().is_some());
    });
}

#[test]
fn a_restart_with_waiters_queued_gives_unavailable_then_everything_works_again() {
    let mut cluster = PgCluster::start(5444);
    let io = Duration::from_millis(500);
    runtime().block_on(async {
        let config = PgConfig::new().with_io_timeout(io);
        let locks = PgLocks::connect_with(&cluster.url(), config).await.unwrap();
        let mut held = locks.try_lock("r", "a", TTL).await.unwrap().unwrap();
        let before = held.token();
        // Queued one after the other, so that w0 is first (spawned together, either may
        // reach the server first, and the one served first would hold its lease in its
        // join handle while this test waits for the other).
        let mut waiters = Vec::new();
        for i in 0..2 {
            let l = locks.clone();
            waiters.push(tokio::spawn(async move {
                l.acquire("r", &format!("w{i}"), TTL).await
            }));
            while locks.snapshot().await.unwrap().waiting.len() < i + 1 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        cluster.stop();
        for _ in 0..3 {
            let start = Instant::now();
            let err = locks.try_lock("x", "b", TTL).await.unwrap_err();
            let took = start.elapsed();
            eprintln!("restart: during the outage: {err} after {took:?}");
            assert!(matches!(err, LockError::Unavailable { .. }), "{err:?}");
            assert!(took <= io + Duration::from_millis(100), "{took:?}");
            assert!(matches!(
                held.renew(TTL).await,
                Err(LockError::Unavailable { .. })
            ));
        }
        cluster.launch();
        // The lease table is durable: the lease held before the restart is still there.
        let start = Instant::now();
        loop {
            match held.renew(TTL).await {
                Ok(()) => break,
                Err(err) => {
                    assert!(start.elapsed() < Duration::from_secs(5), "still {err}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
        eprintln!(
            "restart: the lease survived; renewed {:?} after the server was back",
            start.elapsed()
        );
        assert!(held.release().await.unwrap());
        // Waiters queued across the restart are served, or ended with Unavailable (a step
        // failed while the server was down); nobody believes it holds a lease it does not.
        let mut served = Vec::new();
        for waiter in waiters {
            match tokio::time::timeout(Duration::from_secs(5), waiter)
                .await
                .unwrap()
                .unwrap()
            {
                Ok(got) => {
                    let got = got.unwrap();
                    assert!(got.is_held().await.unwrap());
                    served.push(got.token());
                    assert!(got.release().await.unwrap());
                }
                Err(err) => {
                    eprintln!("restart: a waiter ended with {err}");
                    assert!(matches!(err, LockError::Unavailable { .. }), "{err:?}");
                }
            }
        }
        eprintln!(
            "restart: {} of 2 waiters were served after the restart",
            served.len()
        );
        let after = locks.try_lock("r", "c", TTL).await.unwrap().unwrap();
        assert!(
            after.token() > before,
            "tokens keep increasing: {} > {before}",
            after.token()
        );
        assert!(served.iter().all(|t| *t > before && *t < after.token()));
    });
}

#[test]
fn a_paused_server_gives_unavailable_within_the_io_timeout() {
    let cluster = PgCluster::start(5445);
    let io = Duration::from_millis(400);
    runtime().block_on(async {
        let config = PgConfig::new().with_io_timeout(io);
        let locks = PgLocks::connect_with(&cluster.url(), config).await.unwrap();
        let mut lock = locks.try_lock("p", "a", TTL).await.unwrap().unwrap();
        cluster.pause();
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
            let start = Instant::now();
            let waited = locks
                .acquire("p", "w", TTL)
                .timeout(Duration::from_secs(5))
                .await;
            assert!(matches!(waited, Err(LockError::Unavailable { .. })));
            worst = worst.max(start.elapsed());
        }
        eprintln!("SIGSTOP: every call returned Unavailable within {worst:?} (io_timeout {io:?})");
        assert!(worst <= io + Duration::from_millis(100), "{worst:?}");
        cluster.resume();
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
        assert!(lock.release().await.unwrap());
        // A timed-out try_lock may have run once the server resumed (the server cancels the
        // engine's statements after statement_timeout = io_timeout, but one may have
        // committed): "q" may be held by a lease nobody has a handle to until its deadline.
        let late = locks.holder("q").await.unwrap();
        eprintln!(
            "SIGSTOP: a timed-out try_lock ran after SIGCONT: {}",
            late.is_some()
        );
        assert!(locks.try_lock("fresh", "b", TTL).await.unwrap().is_some());
    });
}
