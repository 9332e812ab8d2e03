//! The files beside the database (`-shm`, `-wal`) deleted while a store has the file open:
//! another process must not open the file on a new `-shm` (it would not see the store's
//! locks: two holders of one name, a corrupted file), and the store refuses everything.
//! The children's roles are in `common/procs.rs`.

mod common;

use std::time::{Duration, Instant};

use common::procs::{Proc, config};
use common::{Scratch, raw, runtime};

/// The children's side: see `common/procs.rs`.
#[test]
fn child() {
    common::procs::child();
}

/// What a child process that opens the file and tries `name` says.
fn open_in_another_process(path: &std::path::Path, name: &str) -> String {
    let mut other = Proc::spawn("open_try", path, name);
    let said = other.next();
    other.wait_ok();
    said
}

#[test]
fn a_deleted_shm_keeps_another_process_out_and_the_store_refuses_everything() {
    let dir = Scratch::new();
    let path = dir.file("app.db");
    let shm = dir.file("app.db-shm");
    runtime().block_on(async {
        let locks = alkstore_sqlite::open_with(&path, config()).await.unwrap();
        raw(&path)
            .execute_batch(
                "CREATE TABLE invoices (id INTEGER PRIMARY KEY, paid INTEGER);
                 INSERT INTO invoices VALUES (1001, 0);",
            )
            .unwrap();
        let mut lock = locks
            .try_lock("x", "A", Duration::from_secs(60))
            .await
            .unwrap()
            .expect("free");
        std::fs::remove_file(&shm).unwrap();
        // A grants nothing more (it would commit into a WAL index nobody else sees).
        let refused = |what: &str, err: alkstore_mem::LockError| {
            let text = err.to_string();
            assert!(text.contains("-shm"), "{what}: {text}");
            assert!(!text.contains("  "), "{what}: single-spaced: {text}");
        };
        refused(
            "try_lock after",
            locks
                .try_lock("y", "A", Duration::from_secs(60))
                .await
                .unwrap_err(),
        );

        // Process B: refused at open (this process holds SQLite's lock on the file), so it
        // cannot be granted `y` (or `x`) on a -shm of its own.
        let said = open_in_another_process(&path, "y");
        assert!(
            said.starts_with("refused") && said.contains("-shm"),
            "B must not open the file on a new -shm while A has it open: {said}"
        );
        assert!(!said.contains("  "), "single-spaced: {said}");
        // A second store in this process would share the deleted -shm: refused too.
        refused(
            "a second store in this process",
            alkstore_sqlite::open_with(&path, config())
                .await
                .map(drop)
                .unwrap_err(),
        );
        // A refuses everything, saying why (its lease lapses at its deadline).
        refused(
            "renew",
            lock.renew(Duration::from_secs(60)).await.unwrap_err(),
        );
        refused("is_held", lock.is_held().await.unwrap_err());
        refused(
            "try_lock",
            locks
                .try_lock("y", "A", Duration::from_secs(5))
                .await
                .unwrap_err(),
        );
        refused("holder", locks.holder("x").await.unwrap_err());
        // Left to lapse (a drop would release it once the file can be written again).
        lock.detach();
        drop(locks);
    });

    // A is closed: B opens now, and A's lease, committed before the -shm went, still holds
    // `x` (the lease lapses at its deadline, never earlier).
    let started = Instant::now();
    let said = loop {
        let said = open_in_another_process(&path, "x");
        if !said.starts_with("refused") || started.elapsed() > Duration::from_secs(20) {
            break said;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(said, "busy", "A's lease is live for a minute");
    let said = open_in_another_process(&path, "y");
    assert!(said.starts_with("granted"), "A never held y: {said}");
    // The user's table is whole.
    let conn = raw(&path);
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let paid: i64 = conn
        .query_row("SELECT paid FROM invoices WHERE id = 1001", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(paid, 0);
}

/// The check that keeps B out reads `/proc/locks`, which other processes' locks enter and
/// leave all the time: A's lock must be seen in every read (a table read in chunks missed
/// it, under load, in one read out of a few).
#[test]
fn another_process_on_a_deleted_shm_is_seen_while_other_locks_come_and_go() {
    let dir = Scratch::new();
    let path = dir.file("app.db");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    runtime().block_on(async {
        let locks = alkstore_sqlite::open_with(&path, config()).await.unwrap();
        let _lock = locks
            .try_lock("x", "A", Duration::from_secs(60))
            .await
            .unwrap()
            .expect("free");
        std::fs::remove_file(dir.file("app.db-shm")).unwrap();
        // Files of their own, written in short transactions: SQLite takes and releases its
        // locks on their -shm each time.
        let churn: Vec<_> = (0..3)
            .map(|i| {
                let (other, stop) = (dir.file(&format!("other{i}.db")), stop.clone());
                std::thread::spawn(move || {
                    let conn = raw(&other);
                    conn.execute_batch(
                        "PRAGMA journal_mode = WAL; CREATE TABLE t (n INTEGER);
                         INSERT INTO t VALUES (0);",
                    )
                    .unwrap();
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        conn.execute("UPDATE t SET n = n + 1", []).unwrap();
                    }
                })
            })
            .collect();
        let mut other = Proc::spawn("open_many", &path, "300");
        let said = other.next();
        other.wait_ok();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for thread in churn {
            thread.join().unwrap();
        }
        assert_eq!(said, "refused 300", "B opened the file on a new -shm");
    });
}

#[test]
fn a_deleted_wal_makes_the_store_refuse_everything() {
    let dir = Scratch::new();
    let path = dir.file("app.db");
    runtime().block_on(async {
        let locks = alkstore_sqlite::open_with(&path, config()).await.unwrap();
        let mut lock = locks
            .try_lock("x", "A", Duration::from_secs(60))
            .await
            .unwrap()
            .expect("free");
        std::fs::remove_file(dir.file("app.db-wal")).unwrap();
        let err = locks
            .try_lock("y", "A", Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("-wal"), "{err}");
        assert!(
            lock.renew(Duration::from_secs(60))
                .await
                .unwrap_err()
                .to_string()
                .contains("-wal")
        );
    });
}
