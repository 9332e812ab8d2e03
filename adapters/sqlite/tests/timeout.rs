//! A `try_lock` refused for time leaves nothing behind: with a 1 ms `io_timeout` while
//! another connection holds the file's write lock, a call the kit answered `Unavailable`
//! could still commit its lease a moment later on the connection thread (about one time in
//! three), held by no handle for its whole ttl. The kit now lets the call run on and undoes
//! whatever it did, retried until the write lock is free.
//!
//! A `try_lock` cut short by its runtime's shutdown grants nothing: the kit's undo (on a
//! connection of its own) may commit before the connection thread runs the queued call,
//! which then finds its request withdrawn.

mod common;

use std::time::{Duration, Instant};

use alkstore_mem::LockError;
use alkstore_sqlite::SqliteConfig;
use common::{Scratch, raw, runtime, store_in};

const TTL: Duration = Duration::from_secs(600);

#[test]
fn a_try_lock_answered_unavailable_leaves_no_lease_once_the_write_lock_is_free() {
    let scratch = Scratch::new();
    let rt = runtime();
    rt.block_on(async {
        // The checking store first (it creates the file), with a generous io_timeout.
        let checker = store_in(&scratch, SqliteConfig::new()).await;
        let hasty = store_in(
            &scratch,
            SqliteConfig::new().with_io_timeout(Duration::from_millis(1)),
        )
        .await;
        let path = scratch.file("locks.db");
        let (mut refused, mut granted, mut busy) = (0, 0, 0);
        for i in 0..60u64 {
            // Another connection holds the write lock and commits about when the call gives
            // up (0.2 to 2 ms).
            let other = raw(&path);
            other.execute_batch("BEGIN IMMEDIATE").unwrap();
            let hold = Duration::from_micros(200 + (i % 7) * 300);
            let freer = std::thread::spawn(move || {
                std::thread::sleep(hold);
                other.execute_batch("COMMIT").unwrap();
            });
            match hasty.try_lock(&format!("job-{i}"), "a", TTL).await {
                // Held for a moment: its drop releases it (retried if the file is busy).
                Ok(Some(lock)) => {
                    granted += 1;
                    drop(lock);
                }
                Ok(None) => busy += 1,
                Err(LockError::Unavailable { .. }) => refused += 1,
                Err(err) => panic!("{err:?}"),
            }
            freer.join().unwrap();
        }
        eprintln!("{refused} refused, {granted} granted, {busy} busy of 60");
        assert!(refused > 0, "no call was refused: the test proves nothing");
        let start = Instant::now();
        loop {
            let held = checker.snapshot().await.unwrap().held;
            if held.is_empty() {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "held by no handle 30 s later: {held:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
}

#[test]
fn a_try_lock_cut_short_by_its_runtimes_shutdown_leaves_no_lease() {
    let scratch = Scratch::new();
    let path = scratch.file("locks.db");
    let rounds = 200u64;
    let mut kept = 0;
    for i in 0..rounds {
        // A runtime per round, dropped with the cut-short call's work pending.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let locks = alkstore_sqlite::open(&path).await.unwrap();
            // Cut short at 0 to 400 µs: before, while or after the call runs.
            let cut = Duration::from_micros((i * 37) % 400);
            let call = locks.try_lock(&format!("u{i}"), "sd", TTL);
            if let Ok(Ok(Some(lock))) = tokio::time::timeout(cut, call).await {
                kept += 1;
                drop(lock);
            }
        });
        drop(rt);
    }
    eprintln!("{kept} of {rounds} try_locks answered before their cut");
    // Every lease left must be one a handle held (and then released): none may stay.
    let conn = raw(&path);
    let start = Instant::now();
    loop {
        let leaked: i64 = conn
            .query_row(
                "SELECT count(*) FROM alkstore_leases WHERE owner IS NOT NULL AND name LIKE 'u%'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        if leaked == 0 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{leaked} leases held by no handle after their runtimes shut down"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
