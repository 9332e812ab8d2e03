//! Hostile review: each test is a defect found on the engine (fixed with it), or a probe
//! that the engine survives hostile input.

mod common;

use std::time::{Duration, Instant};

use alkstore_sqlite::SqliteConfig;
use common::{Scratch, raw, runtime};

const TTL: Duration = Duration::from_secs(30);

/// The tests of this file run one at a time: one counts the threads of the process.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

fn named_threads(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| {
                    std::fs::read_to_string(e.path().join("comm"))
                        .is_ok_and(|c| c.trim_end().starts_with(prefix))
                })
                .count()
        })
        .unwrap_or(0)
}

/// A store dropped while acquire calls wait ends its connection thread and its watcher
/// thread.
#[test]
fn a_store_dropped_while_waiters_wait_ends_its_threads() {
    let _serial = serial();
    let dir = Scratch::new();
    let rt = runtime();
    rt.block_on(async {
        // The stores of the tests before (run one at a time) end their threads too.
        let settle = Instant::now() + Duration::from_secs(10);
        while named_threads("alkstore-sqlite") > 0 && Instant::now() < settle {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let before = named_threads("alkstore-sqlite");
        {
            let locks = common::store_in(&dir, SqliteConfig::new()).await;
            let held = locks.try_lock("n", "o", TTL).await.unwrap().unwrap();
            let mut waiters = Vec::new();
            for i in 0..3 {
                let locks = locks.clone();
                waiters.push(tokio::spawn(async move {
                    let _ = locks
                        .acquire("n", &format!("w{i}"), TTL)
                        .timeout(Duration::from_secs(60))
                        .await;
                }));
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            for w in &waiters {
                w.abort();
            }
            for w in waiters {
                let _ = w.await;
            }
            held.detach();
            drop(locks);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while named_threads("alkstore-sqlite") > before && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            named_threads("alkstore-sqlite") <= before,
            "threads left: {} of {}",
            named_threads("alkstore-sqlite"),
            threads()
        );
    });
}

/// Hostile names and owners: SQL-ish text, NUL, 64 KiB. Each is refused before I/O or kept
/// exactly; nothing leaks between names that differ after a NUL.
#[test]
fn hostile_names_and_owners_are_refused_or_kept_exactly() {
    let _serial = serial();
    runtime().block_on(async {
        let dir = Scratch::new();
        let locks = common::store_in(&dir, SqliteConfig::new()).await;
        let big = "x".repeat(64 * 1024);
        assert!(locks.try_lock(big.as_str(), "o", TTL).await.is_err());
        assert!(locks.try_lock("n", big.as_str(), TTL).await.is_err());
        for name in ["'; DROP TABLE alkstore_leases; --", "a\"b", "%_*", "a\0b"] {
            match locks.try_lock(name, "o'\0\"", TTL).await {
                Ok(Some(lock)) => {
                    assert_eq!(lock.name(), name);
                    let h = locks.holder(name).await.unwrap().unwrap();
                    assert_eq!(h.name(), name);
                    assert_eq!(h.owner(), "o'\0\"");
                    assert!(lock.release().await.unwrap());
                }
                Ok(None) => panic!("{name:?} busy on a fresh file"),
                Err(_) => {}
            }
        }
        let a = locks.try_lock("a\0b", "o", TTL).await;
        let c = locks.try_lock("a\0c", "o", TTL).await;
        if let (Ok(a), Ok(c)) = (a, c) {
            assert!(a.is_some() && c.is_some(), "names differing after NUL met");
        }
    });
}

/// Two namespaces that differ only in case are the same tables to SQLite (identifiers are
/// case-insensitive): they must be refused or kept apart, never share a lock space silently.
#[test]
fn namespaces_differing_only_in_case_do_not_meet() {
    let _serial = serial();
    runtime().block_on(async {
        let dir = Scratch::new();
        let lower = common::store_in(&dir, SqliteConfig::new().with_namespace("jobs")).await;
        let upper = alkstore_sqlite::open_with(
            dir.file("locks.db"),
            SqliteConfig::new().with_namespace("JOBS"),
        )
        .await;
        if let Ok(upper) = upper {
            let held = lower.try_lock("n", "o", TTL).await.unwrap().unwrap();
            assert!(
                upper.try_lock("n", "p", TTL).await.unwrap().is_some(),
                "JOBS and jobs share locks"
            );
            held.release().await.unwrap();
        } else if let Err(err) = upper {
            // Refused with the reason (a hostile review: it was SQLite's raw "table JOBS_meta
            // already exists", with the schema's text).
            let reason = err.to_string();
            assert!(
                reason.contains("the namespace \"jobs\"") && !reason.contains("already exists"),
                "{reason}"
            );
        }
    });
}

/// A current-thread tokio runtime: every call answers (the connection thread does the
/// blocking work).
#[test]
fn a_current_thread_runtime_works() {
    let _serial = serial();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = Scratch::new();
        let locks = common::store_in(&dir, SqliteConfig::new()).await;
        let lock = locks.try_lock("n", "a", TTL).await.unwrap().unwrap();
        let l2 = locks.clone();
        let waiter = tokio::spawn(async move {
            l2.acquire("n", "b", TTL)
                .timeout(Duration::from_secs(20))
                .await
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(lock.release().await.unwrap());
        let got = tokio::time::timeout(Duration::from_secs(20), waiter)
            .await
            .expect("the waiter answers")
            .unwrap()
            .unwrap();
        assert!(got.is_some());
    });
}

/// ttl at its extremes: `Duration::MAX` is kept (cut to the engine's bound) without overflow
/// anywhere; 1 ns gives a lease that lapses at once and is taken over.
#[test]
fn ttl_duration_max_and_one_nanosecond() {
    let _serial = serial();
    runtime().block_on(async {
        let dir = Scratch::new();
        let locks = common::store_in(&dir, SqliteConfig::new()).await;
        if let Ok(Some(mut lock)) = locks.try_lock("max", "o", Duration::MAX).await {
            let _ = lock.deadline();
            let _ = lock.ttl();
            let _ = lock.info();
            assert!(lock.is_held().await.unwrap());
            let h = locks.holder("max").await.unwrap().expect("held");
            let _ = h.deadline();
            let _ = locks.snapshot().await.unwrap();
            let _ = lock.renew(Duration::MAX).await;
            assert!(locks.try_lock("max", "p", TTL).await.unwrap().is_none());
            assert!(lock.release().await.unwrap());
        }
        if let Ok(Some(short)) = locks.try_lock("ns", "o", Duration::from_nanos(1)).await {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let next = locks
                .try_lock("ns", "p", TTL)
                .await
                .unwrap()
                .expect("a 1 ns lease lapsed");
            assert!(next.token() > short.token());
            assert!(!short.release().await.unwrap());
            assert!(next.release().await.unwrap());
        }
    });
}

/// 2000 leases taken and released: the rows follow the live state.
#[test]
fn rows_follow_the_live_state_after_many_releases() {
    let _serial = serial();
    runtime().block_on(async {
        let dir = Scratch::new();
        let locks = common::store_in(&dir, SqliteConfig::new()).await;
        let mut held = Vec::new();
        for i in 0..2000 {
            held.push(
                locks
                    .try_lock(&format!("n{i}"), "o", TTL)
                    .await
                    .unwrap()
                    .unwrap(),
            );
        }
        for lock in held {
            assert!(lock.release().await.unwrap());
        }
        let conn = raw(&dir.file("locks.db"));
        let rows: i64 = conn
            .query_row(
                "SELECT (SELECT count(*) FROM alkstore_leases WHERE name <> '') + \
                 (SELECT count(*) FROM alkstore_waiters)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(rows, 0);
        assert!(locks.snapshot().await.unwrap().held.is_empty());
    });
}

/// Many stores on one file in one process: exclusion holds and every store's threads end.
#[test]
fn many_stores_on_one_file_in_one_process() {
    let _serial = serial();
    runtime().block_on(async {
        let dir = Scratch::new();
        let mut stores = Vec::new();
        for _ in 0..12 {
            stores.push(common::store_in(&dir, SqliteConfig::new()).await);
        }
        let inside = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for (i, s) in stores.iter().enumerate() {
            let (s, inside) = (s.clone(), inside.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..10 {
                    let lock = s
                        .acquire("shared", &format!("s{i}"), TTL)
                        .timeout(Duration::from_secs(60))
                        .await
                        .unwrap()
                        .expect("granted within a minute");
                    assert_eq!(inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst), 0);
                    tokio::task::yield_now().await;
                    inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    assert!(lock.release().await.unwrap());
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
}

/// A plain connection that keeps a read transaction open (checkpoints cannot finish) does not
/// stop the engine; one that switches the file to `journal_mode=DELETE` while the store is
/// open is refused by SQLite or, if it got through, the store still excludes.
#[test]
fn a_long_reader_and_a_journal_mode_switch_do_not_break_the_store() {
    let _serial = serial();
    runtime().block_on(async {
        let dir = Scratch::new();
        let locks = common::store_in(&dir, SqliteConfig::new()).await;
        let reader = raw(&dir.file("locks.db"));
        reader.execute_batch("BEGIN").unwrap();
        let _: i64 = reader
            .query_row("SELECT count(*) FROM alkstore_leases", [], |r| r.get(0))
            .unwrap();
        for i in 0..300 {
            let lock = locks
                .try_lock(&format!("r{i}"), "o", TTL)
                .await
                .unwrap()
                .unwrap();
            assert!(lock.release().await.unwrap());
        }
        reader.execute_batch("COMMIT").unwrap();
        let user = raw(&dir.file("locks.db"));
        user.busy_timeout(Duration::from_millis(200)).unwrap();
        let mode: Result<String, _> =
            user.query_row("PRAGMA journal_mode = DELETE", [], |r| r.get(0));
        let held = locks.try_lock("j", "a", TTL).await.unwrap().unwrap();
        assert!(
            locks.try_lock("j", "b", TTL).await.unwrap().is_none(),
            "excluded after journal_mode {mode:?}"
        );
        assert!(held.release().await.unwrap());
    });
}

/// A user's connection holding `BEGIN EXCLUSIVE`: every call answers `Unavailable` within a
/// generous bound of the io_timeout, none hangs or panics, and all work again after it ends.
#[test]
fn a_user_exclusive_transaction_gives_unavailable_then_recovers() {
    let _serial = serial();
    runtime().block_on(async {
        let dir = Scratch::new();
        let io = Duration::from_millis(300);
        let locks = common::store_in(&dir, SqliteConfig::new().with_io_timeout(io)).await;
        let lock = locks.try_lock("x", "a", TTL).await.unwrap().unwrap();
        let user = raw(&dir.file("locks.db"));
        user.execute_batch("BEGIN EXCLUSIVE").unwrap();
        let started = Instant::now();
        assert!(locks.try_lock("y", "a", TTL).await.is_err());
        assert!(started.elapsed() < Duration::from_secs(5));
        user.execute_batch("ROLLBACK").unwrap();
        assert!(locks.holder("x").await.unwrap().is_some());
        assert!(lock.release().await.unwrap());
    });
}

/// The runtime shut down while acquire calls wait (their futures dropped mid-wait, the store
/// with them): the connection thread and the watcher thread end.
#[test]
fn a_runtime_shut_down_while_waiters_wait_ends_the_threads() {
    let _serial = serial();
    let dir = Scratch::new();
    let settle = Instant::now() + Duration::from_secs(10);
    while named_threads("alkstore-sqlite") > 0 && Instant::now() < settle {
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = named_threads("alkstore-sqlite");
    let rt = runtime();
    rt.block_on(async {
        let locks = common::store_in(&dir, SqliteConfig::new()).await;
        let held = locks.try_lock("n", "o", TTL).await.unwrap().unwrap();
        for i in 0..3 {
            let locks = locks.clone();
            tokio::spawn(async move {
                let _ = locks
                    .acquire("n", &format!("w{i}"), TTL)
                    .timeout(Duration::from_secs(600))
                    .await;
            });
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        held.detach();
    });
    drop(rt);
    let deadline = Instant::now() + Duration::from_secs(10);
    while named_threads("alkstore-sqlite") > before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        named_threads("alkstore-sqlite") <= before,
        "threads left: {} (before {before})",
        named_threads("alkstore-sqlite")
    );
}
