//! A hostile user's checks of schema version 2 and of the shortcuts that made operations
//! cheaper: the state row kept among the leases is never a lock, a release that leaves the
//! clock floor never lets a lease come back or a token repeat when the clock steps back, a
//! namespace made by version 1 is refused with the reason, and a file on tmpfs works across
//! stores (separate connections, as separate processes have).

mod common;

use std::time::Duration;

use alkstore_mem::LockError;
use alkstore_sqlite::SqliteConfig;
use common::{Scratch, raw, runtime};

const TTL: Duration = Duration::from_secs(30);

#[test]
fn the_state_row_among_the_leases_is_never_a_lock() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let path = dir.file("locks.db");
        let locks = alkstore_sqlite::open(&path).await.unwrap();
        let lock = locks.try_lock("a", "o", TTL).await.unwrap().unwrap();
        let snapshot = locks.snapshot().await.unwrap();
        let names: Vec<&str> = snapshot.held.iter().map(|l| l.name()).collect();
        assert_eq!(names, ["a"], "the state row is not listed");
        assert!(locks.holder("").await.unwrap().is_none());
        assert!(locks.force_release("").await.unwrap().is_none());
        assert!(matches!(
            locks.try_lock("", "o", TTL).await,
            Err(LockError::InvalidName { .. })
        ));
        // A plain SQL client cannot fence with the state row's token.
        let conn = raw(&path);
        alkstore_sqlite::install_fence(&conn).unwrap();
        let state_token: i64 = conn
            .query_row(
                "SELECT token FROM alkstore_leases WHERE name = ''",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(u64::try_from(state_token).unwrap(), lock.token());
        let refused = conn.query_row("SELECT alkstore_fence('', ?1)", [state_token], |r| {
            r.get::<_, i64>(0)
        });
        assert!(refused.is_err(), "{refused:?}");
        // The state row survives every release (the file holds it and nothing else).
        assert!(lock.release().await.unwrap());
        let rows: Vec<String> = conn
            .prepare("SELECT name FROM alkstore_leases")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows, [""]);
    });
}

#[test]
fn a_release_that_leaves_the_floor_then_a_clock_stepped_back_revives_nothing() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let path = dir.file("locks.db");
        let locks = alkstore_sqlite::open(&path).await.unwrap();
        let first = locks.try_lock("a", "o", TTL).await.unwrap().unwrap();
        let (token, deadline) = (first.token(), first.deadline());
        locks
            .advance_test_clock(Duration::from_secs(1))
            .await
            .unwrap();
        // The holder's own release with nobody waiting: the floor stays where it was.
        assert!(first.release().await.unwrap());
        raw(&path)
            .execute_batch("UPDATE alkstore_test_clock SET offset_us = offset_us - 600000000")
            .unwrap();
        assert!(
            locks.holder("a").await.unwrap().is_none(),
            "released stays released"
        );
        let next = locks.try_lock("a", "p", TTL).await.unwrap().unwrap();
        assert!(next.token() > token, "{} after {token}", next.token());
        assert!(next.deadline() > deadline, "lease time never went back");
        let other = locks.try_lock("b", "p", TTL).await.unwrap().unwrap();
        assert!(other.token() > next.token(), "unique in the namespace");
    });
}

#[test]
fn a_namespace_made_by_schema_version_1_is_refused_with_the_reason() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let path = dir.file("locks.db");
        drop(alkstore_sqlite::open(&path).await.unwrap());
        // What version 1 left: a `_state` table of its own, and its version mark.
        raw(&path)
            .execute_batch(
                "CREATE TABLE alkstore_state (id INTEGER PRIMARY KEY, floor INTEGER NOT NULL,
                     token INTEGER NOT NULL, arrival INTEGER NOT NULL);
                 UPDATE alkstore_meta SET value = '1' WHERE key = 'version';",
            )
            .unwrap();
        let err = alkstore_sqlite::open(&path).await.expect_err("refused");
        let LockError::Unavailable { reason } = err else {
            panic!("{err:?}");
        };
        assert!(
            reason.contains("older") && reason.contains("version 1"),
            "{reason}"
        );
    });
}

#[test]
fn a_file_on_tmpfs_is_shared_by_two_stores_with_hand_off() {
    // /dev/shm is a tmpfs on Linux; elsewhere the system temp dir stands in for it.
    let base = std::path::Path::new("/dev/shm");
    let base = if base.is_dir() {
        base.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("alkstore-sqlite-attack-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("locks.db");
    runtime().block_on(async {
        let a = alkstore_sqlite::open(&path).await.unwrap();
        let b = alkstore_sqlite::open(&path).await.unwrap();
        let held = a.try_lock("t", "a", TTL).await.unwrap().unwrap();
        let waiting = tokio::spawn({
            let b = b.clone();
            async move {
                b.acquire("t", "b", TTL)
                    .timeout(Duration::from_secs(20))
                    .await
            }
        });
        while a.snapshot().await.unwrap().waiting.is_empty() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        assert!(
            a.try_lock("t", "c", TTL).await.unwrap().is_none(),
            "no barging"
        );
        let token = held.token();
        assert!(held.release().await.unwrap());
        let got = waiting.await.unwrap().unwrap().expect("handed over");
        assert_eq!(got.owner(), "b");
        assert!(got.token() > token);
        assert!(got.release().await.unwrap());
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_empty_path_and_a_truncated_file_are_refused_with_the_real_reason() {
    runtime().block_on(async {
        for empty in ["", ":memory:"] {
            let err = alkstore_sqlite::open(empty).await.unwrap_err();
            assert!(
                err.to_string().contains("not a file path"),
                "{empty:?}: {err}"
            );
        }
        let dir = Scratch::new();
        let path = dir.file("locks.db");
        let config = SqliteConfig::new().with_io_timeout(Duration::from_millis(300));
        let locks = alkstore_sqlite::open_with(&path, config.clone())
            .await
            .unwrap();
        let _held = locks.try_lock("a", "o", TTL).await.unwrap().unwrap();
        std::fs::File::create(&path).unwrap(); // truncated to 0 bytes while in use
        let err = alkstore_sqlite::open_with(&path, config).await.unwrap_err();
        eprintln!("{err}");
        assert!(!err.to_string().contains("stayed locked"), "{err}");
    });
}

/// A file's other names (a hostile review's findings): a symlink is followed, as SQLite
/// follows it for its `-wal` and `-shm` (it was refused, after the schema was written, with a
/// false "deleted while open"), and stores through the link and through the file share one
/// lock table; a hard link is refused at `open`, before anything is made beside it (each name
/// gets a `-wal` and `-shm` of its own: a store through the second name was granted a lock
/// the first one held); a `file:` URI is refused, creating nothing.
#[test]
fn a_symlink_is_followed_and_a_hard_link_or_a_uri_is_refused() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let (real, link) = (dir.file("real.db"), dir.file("link.db"));
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let by_link = alkstore_sqlite::open(&link)
            .await
            .expect("a symlink is followed");
        assert_eq!(by_link.engine().path(), real.canonicalize().unwrap());
        let by_file = alkstore_sqlite::open(&real).await.unwrap();
        let held = by_link.try_lock("x", "a", TTL).await.unwrap().unwrap();
        assert!(by_file.try_lock("x", "b", TTL).await.unwrap().is_none());
        let refused = |err: LockError| match err {
            LockError::Unavailable { reason } => reason,
            other => panic!("{other:?}"),
        };

        let hard = dir.file("hard.db");
        std::fs::hard_link(&real, &hard).unwrap();
        let reason = refused(alkstore_sqlite::open(&hard).await.expect_err("a hard link"));
        assert!(reason.contains("2 hard links"), "{reason}");
        assert!(!reason.contains("  "), "runs of spaces in {reason:?}");
        for side in ["hard.db-wal", "hard.db-shm"] {
            assert!(!dir.file(side).exists(), "{side} was made");
        }
        assert!(held.is_held().await.unwrap(), "the open stores go on");
        assert!(held.release().await.unwrap());
        assert!(by_file.try_lock("x", "b", TTL).await.unwrap().is_some());

        let uri = format!("file:{}", dir.file("uri.db").display());
        let reason = refused(alkstore_sqlite::open(&uri).await.expect_err("a URI"));
        assert!(reason.contains("SQLite URI"), "{reason}");
        assert!(!dir.file("uri.db").exists(), "the URI's file was made");
    });
}
