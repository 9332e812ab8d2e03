//! Issue-13 review: faults, each on a throwaway cluster of its own on 127.0.0.1:5451-5454
//! (common::PgCluster: initdb as user postgres, stopped also when the test panics).

mod common;
mod r13;

use std::time::{Duration, Instant};

use alkstore_mem::LockError;
use alkstore_pg::{PgConfig, PgLocks};
use common::PgCluster;
use r13::{TTL, ms};

async fn connect(url: &str, io: Duration) -> PgLocks {
    let config = PgConfig::new().with_schema("review").with_io_timeout(io);
    PgLocks::connect_with(url, config).await.unwrap()
}

/// Tokens after a crash on a server whose default is `synchronous_commit = off` (a common
/// setting; `scripts/pg-run.sh` runs the shared test cluster with it). The engine does not
/// set `synchronous_commit = on` for its own sessions, so grants whose replies the holders
/// got are lost with the crash, and the sequence hands their tokens out again.
#[test]
fn tokens_never_repeat_after_a_crash_whatever_the_servers_commit_setting() {
    let (before, after, held) = tokens_around_a_crash(5451, true);
    assert!(
        after > before,
        "a grant after the crash got token {after}; before it, holders were told tokens up \
         to {before} (and n99's lease, whose holder got token {before}, is now {held:?})"
    );
}

/// The same with the server's default `synchronous_commit = on`: tokens go on increasing.
#[test]
fn tokens_never_repeat_after_a_crash_with_synchronous_commit() {
    let (before, after, held) = tokens_around_a_crash(5455, false);
    assert!(after > before, "{after} after {before}");
    assert_eq!(held.map(|h| h.token()), Some(before));
}

/// 100 grants on a fresh schema, a crash (immediate stop, recovery), one more grant: the
/// largest token before, the token after, and the last name's holder after.
fn tokens_around_a_crash(
    port: u16,
    async_commit: bool,
) -> (u64, u64, Option<alkstore_mem::LeaseInfo>) {
    let mut cluster = PgCluster::start(port);
    if async_commit {
        cluster.psql("ALTER SYSTEM SET synchronous_commit = off");
        cluster.psql("ALTER SYSTEM SET wal_writer_delay = '10s'");
        cluster.restart();
    }
    let rt = common::runtime();
    let url = cluster.url();
    let first = rt.block_on(async {
        let locks = connect(&url, ms(2000)).await;
        cluster.psql("CHECKPOINT"); // the schema itself is durable
        let mut tokens = Vec::new();
        for i in 0..100 {
            let lock = locks
                .try_lock(&format!("n{i}"), "o", TTL)
                .await
                .unwrap()
                .unwrap();
            tokens.push(lock.token());
            lock.detach();
        }
        tokens
    });
    cluster.restart(); // a crash: pg_ctl stop -m immediate, then recovery
    let (after, held) = rt.block_on(async {
        let locks = connect(&url, ms(2000)).await;
        let lock = locks.try_lock("fresh", "o", TTL).await.unwrap().unwrap();
        let held = locks.holder("n99").await.unwrap();
        (lock.token(), held)
    });
    (*first.iter().max().unwrap(), after, held)
}

/// A bounded wait must resolve no later than wait + io_timeout after its first poll. The
/// server is stopped (SIGSTOP) when the acquire starts and again just after its first step
/// answered: the wait is counted from the server's first step, not from the first poll.
/// (The time is taken where the future resolves, inside its task: this thread only looks
/// after its own sleeps, 1.76 s in.)
#[test]
fn a_bounded_wait_ends_within_wait_plus_io_timeout_of_its_first_poll() {
    let cluster = PgCluster::start(5452);
    let rt = common::runtime();
    let io = ms(1000);
    let locks = rt.block_on(connect(&cluster.url(), io));
    let held = rt.block_on(locks.try_lock("b", "h", TTL)).unwrap().unwrap();
    cluster.pause();
    let started = Instant::now();
    let l2 = locks.clone();
    let waiting = rt.spawn(async move {
        let out = l2.acquire("b", "w", TTL).timeout(ms(100)).await;
        (out, started.elapsed())
    });
    std::thread::sleep(ms(800));
    cluster.resume();
    std::thread::sleep(ms(60)); // the first step runs and answers "queued until +100 ms"
    cluster.pause();
    std::thread::sleep(ms(900));
    cluster.resume();
    let (out, took) = rt.block_on(waiting).unwrap();
    drop(held);
    assert!(
        took <= ms(100) + io + ms(150),
        "timeout(100 ms) with io_timeout 1 s resolved after {took:?}: {out:?}"
    );
}

/// SIGSTOP with a lease held: keep_alive keeps asking while the deadline is ahead (a
/// renewal that got no answer says nothing about the lease) and ends with Expired at the
/// deadline by the local estimate, never past it; lapsed() resolves with Expired at the
/// deadline too (not later), and after SIGCONT the same store works.
#[test]
fn lapsed_and_keep_alive_under_a_stopped_server() {
    let cluster = PgCluster::start(5453);
    let rt = common::runtime();
    let io = ms(500);
    let locks = rt.block_on(connect(&cluster.url(), io));
    let lock = rt
        .block_on(locks.try_lock("s", "o", ms(3000)))
        .unwrap()
        .unwrap();
    let granted = Instant::now();
    cluster.pause();
    let (why_kept, kept_for, why_lapsed, lapsed_at) = rt.block_on(async {
        let started = Instant::now();
        let kept = lock.keep_alive(Duration::ZERO).await;
        let kept_for = started.elapsed();
        let lapsed = lock.lapsed().await;
        (kept, kept_for, lapsed, granted.elapsed())
    });
    cluster.resume();
    assert!(
        matches!(why_kept, LockError::Expired { .. }),
        "{why_kept:?}"
    );
    // Started at the grant: it ends at the 3 s deadline (by the local estimate, which errs
    // early by up to a round trip), not before its renewals had the whole lease to try.
    assert!(
        kept_for >= ms(2500) && kept_for <= ms(3000) + ms(200),
        "keep_alive ended after {kept_for:?}"
    );
    assert!(
        matches!(why_lapsed, LockError::Expired { .. }),
        "{why_lapsed:?}"
    );
    assert!(
        lapsed_at >= ms(2500) && lapsed_at <= ms(3300),
        "lapsed() at {lapsed_at:?} for a 3 s lease"
    );
    rt.block_on(async {
        let next = locks.try_lock("s", "p", TTL).await.unwrap().unwrap();
        assert!(next.token() > lock.token());
        let other = locks.try_lock("t", "p", TTL).await.unwrap().unwrap();
        assert!(other.release().await.unwrap());
    });
}

/// Every engine backend terminated (pg_terminate_backend) over and over while 8 tasks lock,
/// renew and release: errors are Unavailable only, and every lease a task was told it holds
/// is live on the server (never a lock believed held that is not); then all works again.
#[test]
fn terminated_pool_connections_mid_call() {
    let cluster = PgCluster::start(5454);
    let rt = common::runtime();
    let locks = rt.block_on(connect(&cluster.url(), ms(2000)));
    let url = cluster.url();
    rt.block_on(async {
        let admin = common::client(&url).await;
        let killer = tokio::spawn(async move {
            for _ in 0..20 {
                tokio::time::sleep(ms(40)).await;
                let _ = admin
                    .execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                         WHERE application_name = 'alkstore-pg'",
                        &[],
                    )
                    .await;
            }
        });
        let mut tasks = Vec::new();
        for t in 0..8 {
            let locks = locks.clone();
            tasks.push(tokio::spawn(async move {
                let mut bad = Vec::new();
                for i in 0..60 {
                    let name = format!("k{}", (t + i) % 3);
                    match locks.try_lock(&name, "o", TTL).await {
                        Ok(Some(mut lock)) => {
                            match lock.is_held().await {
                                Ok(false) => bad.push(format!("{name}: granted, not held")),
                                Ok(true) | Err(LockError::Unavailable { .. }) => {}
                                Err(e) => bad.push(format!("{e:?}")),
                            }
                            match lock.renew(TTL).await {
                                Ok(()) | Err(LockError::Unavailable { .. }) => {}
                                Err(e) => bad.push(format!("renew: {e:?}")),
                            }
                            match lock.release().await {
                                Ok(_) | Err(LockError::Unavailable { .. }) => {}
                                Err(e) => bad.push(format!("release: {e:?}")),
                            }
                        }
                        Ok(None) | Err(LockError::Unavailable { .. }) => {}
                        Err(e) => bad.push(format!("try_lock: {e:?}")),
                    }
                }
                bad
            }));
        }
        let mut bad = Vec::new();
        for t in tasks {
            bad.extend(t.await.unwrap());
        }
        killer.await.unwrap();
        assert!(bad.is_empty(), "{bad:?}");
        for n in 0..3 {
            let _ = locks.force_release(&format!("k{n}")).await.unwrap();
        }
        let lock = locks.try_lock("k0", "after", TTL).await.unwrap().unwrap();
        assert!(lock.release().await.unwrap());
    });
}
