//! The statements the connection thread keeps prepared, attacked: the schema changed under
//! them by another connection (an index, a column, the tables dropped and made again), a
//! busy file and a panic in the middle of an operation. After each, the store answers from
//! the file as it is now, and its connection holds no statement mid-step (which would keep a
//! read snapshot open: stale rows, and a checkpoint that can never finish).

mod common;

use std::time::{Duration, Instant};

use alkstore_mem::LockError;
use alkstore_sqlite::{SqliteConfig, SqliteLocks};
use common::{Scratch, raw, runtime, store_in};

const TTL: Duration = Duration::from_secs(600);

/// Every operation once, including a hand-off to a queued waiter: every kept statement of
/// the common paths is prepared (or used again).
async fn exercise(locks: &SqliteLocks, tag: &str) {
    let name = format!("ex-{tag}");
    let held = locks.try_lock(&name, "a", TTL).await.unwrap().unwrap();
    let waiter = tokio::spawn({
        let (locks, name) = (locks.clone(), name.clone());
        async move { locks.acquire(&name, "b", TTL).await }
    });
    while locks.snapshot().await.unwrap().waiting.is_empty() {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert!(held.is_held().await.unwrap());
    assert_eq!(locks.holder(&name).await.unwrap().unwrap().owner(), "a");
    assert!(held.release().await.unwrap());
    let mut second = waiter.await.unwrap().unwrap().unwrap();
    assert!(second.token() > 0);
    second.renew(TTL).await.unwrap();
    assert!(locks.force_release(&name).await.unwrap().is_some());
    assert!(!second.release().await.unwrap());
    let snapshot = locks.snapshot().await.unwrap();
    assert!(
        snapshot.held.iter().all(|l| l.name() != name),
        "{snapshot:?}"
    );
}

/// Within 5 s, a `TRUNCATE` checkpoint from another connection finishes (busy = 0): no
/// connection of the store keeps a statement mid-step (a read snapshot open) for good.
fn checkpoint_finishes(path: &std::path::Path) {
    let conn = raw(path);
    let start = Instant::now();
    loop {
        let busy: i64 = conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
            .unwrap();
        if busy == 0 {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "a connection of the store keeps a read snapshot open"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_schema_changed_under_the_kept_statements_by_another_connection() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    runtime().block_on(async {
        let locks = store_in(&dir, SqliteConfig::new()).await;
        exercise(&locks, "before").await;
        let held = locks.try_lock("kept", "a", TTL).await.unwrap().unwrap();
        // Another connection changes the schema (the statements are re-prepared by SQLite).
        raw(&path)
            .execute_batch(
                "CREATE INDEX extra_owner ON alkstore_leases (owner);
                 ALTER TABLE alkstore_waiters ADD COLUMN junk TEXT;
                 ALTER TABLE alkstore_bells ADD COLUMN junk TEXT;",
            )
            .unwrap();
        assert!(held.is_held().await.unwrap());
        exercise(&locks, "altered").await;
        checkpoint_finishes(&path);
        // Rows changed by another connection are seen at once (no stale snapshot).
        raw(&path)
            .execute(
                "UPDATE alkstore_leases SET owner = 'other' WHERE name = 'kept'",
                [],
            )
            .unwrap();
        assert_eq!(
            locks.holder("kept").await.unwrap().unwrap().owner(),
            "other"
        );
        let old_token = held.token();
        // The tables dropped under the store: every call errs (never panics nor hangs).
        raw(&path)
            .execute_batch(
                "DROP TABLE alkstore_leases; DROP TABLE alkstore_waiters;
                 DROP TABLE alkstore_cancelled; DROP TABLE alkstore_bells;
                 DROP TABLE alkstore_test_clock; DROP TABLE alkstore_meta;",
            )
            .unwrap();
        for _ in 0..3 {
            let err = locks.try_lock("n", "a", TTL).await.expect_err("no tables");
            assert!(matches!(err, LockError::Unavailable { .. }), "{err:?}");
            assert!(held.is_held().await.is_err());
            assert!(locks.snapshot().await.is_err());
        }
        checkpoint_finishes(&path);
        // Made again by a new store: the old store works on the new tables at once.
        let fresh = alkstore_sqlite::open(&path).await.unwrap();
        assert!(!held.is_held().await.unwrap(), "a lease of dropped tables");
        let again = locks.try_lock("kept", "a", TTL).await.unwrap().unwrap();
        assert!(
            again.token() > old_token,
            "{} after {old_token}",
            again.token()
        );
        assert!(fresh.try_lock("kept", "b", TTL).await.unwrap().is_none());
        drop(again);
        exercise(&locks, "recreated").await;
        exercise(&fresh, "fresh").await;
        drop(held);
        checkpoint_finishes(&path);
    });
}

#[test]
fn busy_errors_and_a_panicking_operation_leave_no_statement_mid_step() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    runtime().block_on(async {
        let locks = store_in(&dir, SqliteConfig::new()).await;
        let hasty = alkstore_sqlite::open_with(
            &path,
            SqliteConfig::new().with_io_timeout(Duration::from_millis(250)),
        )
        .await
        .unwrap();
        exercise(&hasty, "warm").await;
        let (mut refused, mut answered) = (0, 0);
        for i in 0..30u64 {
            let other = raw(&path);
            other.execute_batch("BEGIN IMMEDIATE").unwrap();
            let hold = Duration::from_millis(100 + (i % 5) * 100);
            let freer = std::thread::spawn(move || {
                std::thread::sleep(hold);
                other.execute_batch("COMMIT").unwrap();
            });
            let name = format!("b{}", i % 5);
            let answer = match i % 3 {
                0 => hasty.try_lock(&name, "h", TTL).await.map(drop),
                1 => hasty
                    .acquire(&name, "h", TTL)
                    .timeout(Duration::from_millis(50))
                    .await
                    .map(drop),
                _ => hasty.snapshot().await.map(drop),
            };
            match answer {
                Ok(()) => answered += 1,
                Err(LockError::Unavailable { .. }) => refused += 1,
                Err(err) => panic!("{err:?}"),
            }
            freer.join().unwrap();
        }
        eprintln!("{refused} refused, {answered} answered of 30");
        assert!(refused > 0, "nothing was refused: the test proves nothing");
        exercise(&hasty, "after-busy").await;
        // The state row's token at its largest: the next grant is refused (never a token
        // that wrapped round to a smaller one), and says why.
        raw(&path)
            .execute(
                "UPDATE alkstore_leases SET token = 9223372036854775807 WHERE name = ''",
                [],
            )
            .unwrap();
        match hasty.try_lock("max", "h", TTL).await {
            Err(err @ LockError::Unavailable { .. }) => {
                assert!(err.to_string().contains("token counter"), "{err}")
            }
            other => panic!("a grant past the largest token: {other:?}"),
        }
        // The connection still works: every other statement answers.
        assert!(hasty.holder("max").await.unwrap().is_none());
        let snapshot = hasty.snapshot().await.unwrap();
        assert!(
            snapshot.held.iter().all(|l| l.name() != "max"),
            "{snapshot:?}"
        );
        checkpoint_finishes(&path);
        drop(locks);
    });
}

/// `chattr` `flag` on `paths`; whether it took.
fn chattr(flag: &str, paths: &[std::path::PathBuf]) -> bool {
    std::process::Command::new("chattr")
        .arg(flag)
        .args(paths)
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn the_file_made_read_only_under_the_store_fails_calls_then_recovers() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    runtime().block_on(async {
        let locks = store_in(&dir, SqliteConfig::new()).await;
        exercise(&locks, "before").await;
        let held = locks.try_lock("held", "a", TTL).await.unwrap().unwrap();
        let files = vec![path.clone(), dir.file("locks.db-wal")];
        if !chattr("+i", &files) {
            eprintln!("skipped: chattr +i is not available here");
            return;
        }
        let mut outcomes = Vec::new();
        for i in 0..20 {
            let answer = locks.try_lock(&format!("ro{i}"), "a", TTL).await;
            outcomes.push(format!("{:?}", answer.as_ref().map(|l| l.is_some())));
            drop(answer);
            let _ = held.is_held().await;
        }
        chattr("-i", &files);
        eprintln!("while immutable: {outcomes:?}");
        // Back to normal: the held lease is still the name's, every statement answers.
        assert!(held.is_held().await.unwrap());
        exercise(&locks, "after").await;
        assert!(held.release().await.unwrap());
        let start = Instant::now();
        while !locks.snapshot().await.unwrap().held.is_empty() {
            assert!(start.elapsed() < Duration::from_secs(20), "leases left");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        checkpoint_finishes(&path);
    });
}

/// Rows of the wrong types written into the namespace's tables by another connection: the
/// calls on those names err (a read fails inside a kept statement's row), every other name
/// keeps working, and no statement is left mid-step.
#[test]
fn rows_of_the_wrong_types_fail_their_names_only() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    runtime().block_on(async {
        let locks = store_in(&dir, SqliteConfig::new()).await;
        exercise(&locks, "before").await;
        raw(&path)
            .execute_batch(
                "INSERT INTO alkstore_leases VALUES ('bad-token', 'o', 'abc', 1, 1, 'r', 1);
                 INSERT INTO alkstore_leases VALUES ('bad-owner', x'ff00', 1, 1, 1, 'r', 1);
                 INSERT INTO alkstore_leases VALUES ('queued', 'o', 1, 9e15, 1, 'r', 1);
                 INSERT INTO alkstore_waiters VALUES ('w1', 'queued', 1, 'o', 1, 0, 'x', NULL, NULL);",
            )
            .unwrap();
        for _ in 0..3 {
            for name in ["bad-token", "bad-owner", "queued"] {
                let answer = locks.try_lock(name, "a", TTL).await;
                assert!(
                    matches!(answer, Err(LockError::Unavailable { .. }) | Ok(None)),
                    "{name}: {answer:?}"
                );
                let _ = locks.holder(name).await;
                let _ = locks.force_release(name).await;
            }
            let _ = locks.snapshot().await;
            exercise(&locks, "between").await;
        }
        checkpoint_finishes(&path);
    });
}
