//! What only the SQLite engine has: opening (refusals, schema, namespaces, user tables), the
//! clock floor, tokens across reopening, a write lock held by another connection, the file
//! deleted or replaced.

mod common;

use std::time::{Duration, Instant};

use alkstore_mem::LockError;
use alkstore_sqlite::{SqliteConfig, SqliteLocks};
use common::{Scratch, raw, runtime};

const TTL: Duration = Duration::from_secs(30);

fn unavailable_reason(err: LockError) -> String {
    match err {
        LockError::Unavailable { reason } => reason,
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

async fn open_err(path: &std::path::Path, config: SqliteConfig) -> String {
    unavailable_reason(
        alkstore_sqlite::open_with(path, config)
            .await
            .expect_err("refused"),
    )
}

#[test]
fn open_refuses_a_file_that_is_not_sqlite() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let path = dir.file("notes.txt");
        std::fs::write(&path, vec![b'x'; 8192]).unwrap();
        let reason = open_err(&path, SqliteConfig::new()).await;
        assert!(reason.contains("not a SQLite database"), "{reason}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            vec![b'x'; 8192],
            "left untouched"
        );
    });
}

#[test]
fn open_refuses_tables_of_the_namespace_that_are_not_ours_and_touches_nothing() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let path = dir.file("app.db");
        let conn = raw(&path);
        conn.execute_batch(
            "CREATE TABLE alkstore_leases (x TEXT); INSERT INTO alkstore_leases VALUES ('mine');",
        )
        .unwrap();
        let reason = open_err(&path, SqliteConfig::new()).await;
        assert!(reason.contains("not made by alkstore-sqlite"), "{reason}");
        let kept: String = conn
            .query_row("SELECT x FROM alkstore_leases", [], |r| r.get(0))
            .unwrap();
        assert_eq!(kept, "mine");
        // Another namespace in the same file is fine.
        let locks = alkstore_sqlite::open_with(&path, SqliteConfig::new().with_namespace("other"))
            .await
            .unwrap();
        assert!(locks.try_lock("a", "o", TTL).await.unwrap().is_some());
    });
}

#[test]
fn open_refuses_a_newer_schema_version() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let path = dir.file("locks.db");
        drop(alkstore_sqlite::open(&path).await.unwrap());
        raw(&path)
            .execute_batch("UPDATE alkstore_meta SET value = '99' WHERE key = 'version'")
            .unwrap();
        let reason = open_err(&path, SqliteConfig::new()).await;
        assert!(reason.contains("newer alkstore-sqlite"), "{reason}");
    });
}

#[test]
fn open_refuses_memory_databases_and_bad_namespaces() {
    runtime().block_on(async {
        for url in [":memory:", "sqlite::memory:", ""] {
            let err = SqliteLocks::connect(url).await.expect_err("refused");
            assert!(unavailable_reason(err).contains("not a file path"));
        }
        let dir = Scratch::new();
        for ns in ["", "1abc", "a-b", "a\"b", &"x".repeat(41)] {
            let reason = open_err(&dir.file("l.db"), SqliteConfig::new().with_namespace(ns)).await;
            assert!(reason.contains("namespace"), "{reason}");
        }
    });
}

#[test]
fn open_refuses_a_missing_directory() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let reason = open_err(&dir.file("no/such/dir/l.db"), SqliteConfig::new()).await;
        assert!(reason.contains("cannot be opened"), "{reason}");
    });
}

#[test]
fn open_refuses_a_read_only_file_when_permissions_apply() {
    use std::os::unix::fs::PermissionsExt;
    runtime().block_on(async {
        let dir = Scratch::new();
        let path = dir.file("ro.db");
        drop(alkstore_sqlite::open(&path).await.unwrap());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        let writable = std::fs::OpenOptions::new().write(true).open(&path).is_ok();
        if writable {
            // Root ignores permission bits: nothing to test here.
            eprintln!("skipped: this user can write a 0444 file (root)");
            return;
        }
        let reason = open_err(&path, SqliteConfig::new()).await;
        assert!(reason.contains("read-only"), "{reason}");
    });
}

/// `chattr +i` on `path` until dropped (root ignores permission bits, not the immutable
/// attribute); `None` where it cannot be set.
struct Immutable(std::path::PathBuf);

impl Immutable {
    fn set(path: &std::path::Path) -> Option<Immutable> {
        let ok = std::process::Command::new("chattr")
            .arg("+i")
            .arg(path)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Immutable(path.to_path_buf()))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn open_refuses_a_read_only_file_or_directory_made_immutable() {
    runtime().block_on(async {
        // A directory nobody may write: a new file cannot be made, and neither can the WAL
        // beside an existing one.
        let dir = Scratch::new();
        let sub = dir.file("ro");
        std::fs::create_dir(&sub).unwrap();
        let existing = sub.join("old.db");
        {
            let conn = raw(&existing);
            conn.execute_batch("CREATE TABLE mine (x); INSERT INTO mine VALUES (1);")
                .unwrap();
        }
        let Some(_guard) = Immutable::set(&sub) else {
            eprintln!("skipped: chattr +i is not available here");
            return;
        };
        let reason = open_err(&sub.join("new.db"), SqliteConfig::new()).await;
        assert!(
            reason.contains("cannot be opened") || reason.contains("read-only"),
            "{reason}"
        );
        eprintln!("new file in a read-only directory refused: {reason}");
        let reason = open_err(&existing, SqliteConfig::new()).await;
        eprintln!("existing file in a read-only directory refused: {reason}");
        assert!(
            reason.contains("read-only")
                || reason.contains("cannot be opened")
                || reason.contains("unable"),
            "{reason}"
        );
        drop(_guard);
        let kept: i64 = raw(&existing)
            .query_row("SELECT x FROM mine", [], |r| r.get(0))
            .unwrap();
        assert_eq!(kept, 1, "the user's table is untouched");
        // A file nobody may write, in a writable directory.
        let file = dir.file("ro.db");
        drop(alkstore_sqlite::open(&file).await.unwrap());
        let _guard = Immutable::set(&file).expect("chattr worked on the directory");
        let reason = open_err(&file, SqliteConfig::new()).await;
        assert!(reason.contains("read-only"), "{reason}");
        eprintln!("read-only file refused: {reason}");
    });
}

#[test]
fn sqlite_urls_and_plain_paths_reach_the_same_file() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let path = dir.file("u.db");
        let a = alkstore_sqlite::open(&path).await.unwrap();
        let b = SqliteLocks::connect(&format!("sqlite://{}", path.display()))
            .await
            .unwrap();
        let c = SqliteLocks::connect(&format!("sqlite:{}", path.display()))
            .await
            .unwrap();
        let lock = a.try_lock("x", "a", TTL).await.unwrap().unwrap();
        assert_eq!(b.holder("x").await.unwrap().unwrap().token(), lock.token());
        assert!(c.try_lock("x", "c", TTL).await.unwrap().is_none());
    });
}

#[test]
fn many_stores_opening_one_new_file_at_once_make_the_schema_once() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let path = dir.file("race.db");
        let opens: Vec<_> = (0..8)
            .map(|_| {
                let path = path.clone();
                tokio::spawn(async move { alkstore_sqlite::open(&path).await })
            })
            .collect();
        let mut stores = Vec::new();
        for open in opens {
            stores.push(open.await.unwrap().expect("every open succeeds"));
        }
        let granted = stores[3].try_lock("x", "a", TTL).await.unwrap().unwrap();
        for store in &stores {
            assert_eq!(
                store.holder("x").await.unwrap().unwrap().token(),
                granted.token()
            );
        }
    });
}

#[test]
fn tokens_keep_growing_after_the_file_is_closed_and_reopened() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let path = dir.file("t.db");
        let mut last = 0;
        for round in 0..3 {
            let locks = alkstore_sqlite::open(&path).await.unwrap();
            for name in ["a", "b"] {
                let lock = locks.try_lock(name, "o", TTL).await.unwrap().unwrap();
                assert!(
                    lock.token() > last,
                    "round {round}: {} after {last}",
                    lock.token()
                );
                last = lock.token();
                assert!(lock.release().await.unwrap());
            }
        }
    });
}

#[test]
fn namespaces_in_one_file_never_meet() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let path = dir.file("ns.db");
        let a = alkstore_sqlite::open_with(&path, SqliteConfig::new().with_namespace("a"))
            .await
            .unwrap();
        let b = alkstore_sqlite::open_with(&path, SqliteConfig::new().with_namespace("b"))
            .await
            .unwrap();
        let _la = a.try_lock("job", "x", TTL).await.unwrap().unwrap();
        let _lb = b.try_lock("job", "y", TTL).await.unwrap().unwrap();
        assert_eq!(a.snapshot().await.unwrap().held.len(), 1);
        assert_eq!(b.snapshot().await.unwrap().held[0].owner(), "y");
    });
}

#[test]
fn a_connection_holding_the_write_lock_forever_gives_unavailable_within_the_io_timeout() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let io = Duration::from_millis(500);
        let config = SqliteConfig::new().with_io_timeout(io);
        let locks = common::store_in(&dir, config).await;
        let blocker = raw(&dir.file("locks.db"));
        blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
        let started = Instant::now();
        let err = locks.try_lock("x", "o", TTL).await.expect_err("busy");
        let took = started.elapsed();
        let reason = unavailable_reason(err);
        assert!(reason.contains("locked by another connection"), "{reason}");
        assert!(took <= io + Duration::from_millis(100), "{took:?}");
        eprintln!("Unavailable after {took:?} (io_timeout {io:?})");
        // A zero wait answers exactly as try_lock (was `Ok(None)`, as if the name were held).
        let zero = locks.acquire("x", "o", TTL).timeout(Duration::ZERO).await;
        assert!(
            matches!(zero, Err(LockError::Unavailable { .. })),
            "{zero:?}"
        );
        // A waiting acquire keeps trying and gets it once the writer is gone.
        let waiting = tokio::spawn({
            let locks = locks.clone();
            async move {
                locks
                    .acquire("x", "w", TTL)
                    .timeout(Duration::from_secs(10))
                    .await
            }
        });
        tokio::time::sleep(Duration::from_millis(700)).await;
        blocker.execute_batch("ROLLBACK").unwrap();
        let lock = waiting
            .await
            .unwrap()
            .unwrap()
            .expect("granted after the writer left");
        assert_eq!(lock.owner(), "w");
    });
}

#[test]
fn the_file_deleted_or_replaced_while_locks_are_held_is_refused_not_silently_forked() {
    runtime().block_on(async {
        for replace in [false, true] {
            let dir = Scratch::new();
            let path = dir.file("locks.db");
            let locks = alkstore_sqlite::open(&path).await.unwrap();
            let lock = locks.try_lock("x", "o", TTL).await.unwrap().unwrap();
            for suffix in ["", "-wal", "-shm"] {
                let mut p = path.as_os_str().to_owned();
                p.push(suffix);
                let _ = std::fs::remove_file(&p);
            }
            if replace {
                drop(alkstore_sqlite::open(&path).await.unwrap());
            }
            let reason = unavailable_reason(locks.try_lock("y", "o", TTL).await.unwrap_err());
            assert!(reason.contains("deleted or replaced"), "{reason}");
            let reason = unavailable_reason(lock.release().await.unwrap_err());
            assert!(reason.contains("deleted or replaced"), "{reason}");
            // Opened again, the store works on the new file.
            let again = alkstore_sqlite::open(&path).await.unwrap();
            assert!(again.try_lock("x", "o2", TTL).await.unwrap().is_some());
        }
    });
}

#[test]
fn a_clock_stepped_back_by_minutes_never_revives_a_lapsed_lease_nor_reuses_a_token() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let path = dir.file("locks.db");
        let locks = alkstore_sqlite::open(&path).await.unwrap();
        let first = locks
            .try_lock("a", "o", Duration::from_secs(5))
            .await
            .unwrap()
            .unwrap();
        let live = locks
            .try_lock("b", "o", Duration::from_secs(60))
            .await
            .unwrap()
            .unwrap();
        let deadline = first.deadline();
        locks
            .advance_test_clock(Duration::from_secs(10))
            .await
            .unwrap();
        assert!(!first.is_held().await.unwrap(), "lapsed");
        // The wall clock steps back by ten minutes.
        raw(&path)
            .execute_batch("UPDATE alkstore_test_clock SET offset_us = offset_us - 600000000")
            .unwrap();
        assert!(!first.is_held().await.unwrap(), "stays lapsed");
        assert!(locks.holder("a").await.unwrap().is_none());
        assert!(
            live.is_held().await.unwrap(),
            "a live lease stays live on the floor's time"
        );
        let next = locks
            .try_lock("a", "p", Duration::from_secs(5))
            .await
            .unwrap()
            .unwrap();
        assert!(next.token() > live.token() && live.token() > first.token());
        assert!(
            next.deadline() > deadline,
            "lease time went on from the floor"
        );
        drop(first);
    });
}
