//! Calls dropped mid-flight, thousands of times, and the single-statement grant: no lease
//! and no waiter is left that no handle holds, tokens strictly grow per name and are unique
//! in a namespace, the clock floor never goes back (the clock stepped back under it), and
//! inputs at the limits are kept exactly or refused before any I/O.

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use alkstore_mem::LockError;
use alkstore_sqlite::SqliteConfig;
use common::{Scratch, raw, runtime, store_in};

const TTL: Duration = Duration::from_secs(600);

fn count(conn: &rusqlite::Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn try_lock_and_acquire_dropped_mid_flight_leave_no_lease_and_no_waiter() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    let rounds = 3000u64;
    runtime().block_on(async {
        let locks = store_in(&dir, SqliteConfig::new()).await;
        // Held throughout: acquires of "busy" queue, and must leave the queue when dropped.
        let blocker = locks
            .try_lock("busy", "keeper", TTL)
            .await
            .unwrap()
            .unwrap();
        let (mut kept, mut tokens) = (0, HashSet::new());
        for i in 0..rounds {
            let cut = Duration::from_micros((i * 131) % 2000);
            let name = format!("c{}", i % 3);
            let got = match i % 4 {
                0 | 1 => tokio::time::timeout(cut, locks.try_lock(&name, "t", TTL)).await,
                2 => tokio::time::timeout(cut, locks.acquire(&name, "a", TTL)).await,
                _ => match tokio::time::timeout(cut, locks.acquire("busy", "w", TTL)).await {
                    Ok(Ok(Some(lock))) => panic!("busy granted while held: {lock:?}"),
                    other => other,
                },
            };
            if let Ok(Ok(Some(lock))) = got {
                kept += 1;
                assert!(tokens.insert(lock.token()), "token {} twice", lock.token());
                drop(lock);
            }
        }
        eprintln!("{kept} of {rounds} calls answered before their cut");
        let conn = raw(&path);
        let start = Instant::now();
        loop {
            let leases = count(
                &conn,
                "SELECT count(*) FROM alkstore_leases WHERE owner IS NOT NULL AND name <> 'busy'",
            );
            let waiters = count(&conn, "SELECT count(*) FROM alkstore_waiters");
            let snapshot = locks.snapshot().await.unwrap();
            if leases == 0 && waiters == 0 && snapshot.held.len() == 1 {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{leases} leases and {waiters} waiters held by no handle: {snapshot:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(blocker.is_held().await.unwrap());
        assert!(blocker.release().await.unwrap());
        // Nothing left in the way: each name is free at once.
        for name in ["busy", "c0", "c1", "c2"] {
            assert!(
                locks.try_lock(name, "z", TTL).await.unwrap().is_some(),
                "{name}"
            );
        }
    });
}

/// The lease-time floor (the state row's `deadline`) and the last token, read raw.
fn state(conn: &rusqlite::Connection, ns: &str) -> (i64, i64) {
    conn.query_row(
        &format!("SELECT deadline, token FROM {ns}_leases WHERE name = ''"),
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .unwrap()
}

#[test]
fn grants_keep_tokens_growing_and_the_floor_still_when_the_clock_steps_back() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    runtime().block_on(async {
        let a = store_in(&dir, SqliteConfig::new().with_namespace("a")).await;
        let b = alkstore_sqlite::open_with(&path, SqliteConfig::new().with_namespace("b"))
            .await
            .unwrap();
        let conn = raw(&path);
        let (mut floor, mut last, mut last_b) = (0i64, 0u64, 0u64);
        let mut seen = HashSet::new();
        for i in 0..60 {
            let name = format!("n{}", i % 2);
            let lock = a
                .try_lock(&name, "o", Duration::from_millis(50))
                .await
                .unwrap()
                .unwrap_or_else(|| panic!("{name} busy at round {i}"));
            let (f, t) = state(&conn, "a");
            assert!(f >= floor, "the floor went back: {f} after {floor}");
            assert!(lock.token() > last, "token {} after {last}", lock.token());
            assert_eq!(
                u64::try_from(t).unwrap(),
                lock.token(),
                "the state row's token"
            );
            assert!(seen.insert(lock.token()));
            assert!(
                i64::try_from(lock.deadline().as_nanos() / 1000).unwrap() > f,
                "a grant whose deadline is not after the floor it wrote"
            );
            // Namespace b: its own counter, growing too.
            let other = b.try_lock(&name, "o", TTL).await.unwrap().unwrap();
            assert!(
                other.token() > last_b,
                "b: token {} after {last_b}",
                other.token()
            );
            last_b = other.token();
            assert!(other.release().await.unwrap());
            (floor, last) = (f, lock.token());
            match i % 3 {
                // The clock steps back a minute, or forward past the ttl, before the release.
                0 => conn
                    .execute_batch("UPDATE a_test_clock SET offset_us = offset_us - 60000000")
                    .unwrap(),
                1 => a
                    .advance_test_clock(Duration::from_millis(60))
                    .await
                    .unwrap(),
                _ => {}
            }
            let (f, _) = state(&conn, "a");
            assert!(f >= floor, "the floor went back: {f} after {floor}");
            lock.release().await.unwrap();
            let (f, _) = state(&conn, "a");
            assert!(f >= floor, "the floor went back: {f} after {floor}");
            floor = f;
        }
    });
}

#[test]
fn names_and_owners_at_their_limits_and_empty_ones_are_refused_before_io() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    runtime().block_on(async {
        // A namespace of the longest length allowed (a letter and 39 more).
        let ns = format!("N{}", "x".repeat(39));
        let config = SqliteConfig::new()
            .with_namespace(&ns)
            .with_io_timeout(Duration::from_secs(3));
        let locks = store_in(&dir, config).await;
        let other = alkstore_sqlite::open_with(&path, SqliteConfig::new())
            .await
            .unwrap();
        let unicode = "é".repeat(128); // 256 bytes
        let mixed = format!("{}🔒", "n".repeat(252)); // 256 bytes
        for name in [unicode.as_str(), mixed.as_str(), "名"] {
            let lock = locks.try_lock(name, &unicode, TTL).await.unwrap().unwrap();
            let h = locks.holder(name).await.unwrap().unwrap();
            assert_eq!((h.name(), h.owner()), (name, unicode.as_str()));
            assert!(other.try_lock(name, "p", TTL).await.unwrap().is_some());
            assert!(lock.release().await.unwrap());
        }
        let long = format!("{unicode}x");
        // The write lock held elsewhere: a refusal that did I/O would wait the io_timeout.
        let blocker = raw(&path);
        blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
        let started = Instant::now();
        for (name, owner) in [
            ("", "o"),
            ("n", ""),
            (long.as_str(), "o"),
            ("n", long.as_str()),
        ] {
            let err = locks.try_lock(name, owner, TTL).await.unwrap_err();
            assert!(!matches!(err, LockError::Unavailable { .. }), "{err:?}");
            let err = locks.acquire(name, owner, TTL).await.unwrap_err();
            assert!(!matches!(err, LockError::Unavailable { .. }), "{err:?}");
        }
        // holder and force_release answer an invalid name `Ok(None)`, without a round trip.
        for name in ["", long.as_str()] {
            assert!(locks.holder(name).await.unwrap().is_none());
            assert!(locks.force_release(name).await.unwrap().is_none());
        }
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(2),
            "refusals took {took:?}: they did I/O"
        );
        blocker.execute_batch("COMMIT").unwrap();
        let state_rows = count(
            &raw(&path),
            &format!("SELECT count(*) FROM {ns}_leases WHERE name = ''"),
        );
        assert_eq!(state_rows, 1);
    });
}

/// An `acquire` cut short by its runtime's shutdown, at 0 to 400 µs, while the name is held
/// by another store: the kit's undo (on a connection of its own) may commit before the
/// queued first step, which must then neither grant nor queue (its id is in the cancelled
/// table, read by the step's first statement).
#[test]
fn an_acquire_cut_short_by_its_runtimes_shutdown_leaves_no_waiter_and_no_lease() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    let keeper_rt = runtime();
    let (keeper, blocker) = keeper_rt.block_on(async {
        let keeper = alkstore_sqlite::open(&path).await.unwrap();
        let blocker = keeper
            .try_lock("held", "keeper", TTL)
            .await
            .unwrap()
            .unwrap();
        (keeper, blocker)
    });
    let rounds = 150u64;
    for i in 0..rounds {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let locks = alkstore_sqlite::open(&path).await.unwrap();
            let cut = Duration::from_micros((i * 37) % 400);
            // Every third round on a free name: a grant that nobody picks up must end too.
            let name = if i % 3 == 0 {
                format!("free{i}")
            } else {
                "held".to_owned()
            };
            let _ = tokio::time::timeout(cut, locks.acquire(&name, "w", TTL)).await;
        });
        drop(rt);
    }
    let conn = raw(&path);
    keeper_rt.block_on(async {
        let start = Instant::now();
        loop {
            let snapshot = keeper.snapshot().await.unwrap();
            let leases = count(
                &conn,
                "SELECT count(*) FROM alkstore_leases WHERE owner IS NOT NULL AND name <> 'held'",
            );
            if snapshot.waiting.is_empty() && snapshot.held.len() == 1 && leases == 0 {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{leases} leases held by no handle: {snapshot:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // The name goes on to nobody: the entries left (if any) are dead and skipped.
        assert!(blocker.release().await.unwrap());
        assert!(keeper.holder("held").await.unwrap().is_none());
        let waiters = count(&conn, "SELECT count(*) FROM alkstore_waiters");
        assert_eq!(waiters, 0, "waiter rows left after the name was settled");
    });
}
