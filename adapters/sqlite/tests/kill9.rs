//! `kill -9` across processes on one file: of a holder (the head waiter in another process
//! takes over at the deadline; how late is printed), of a waiter (skipped), of a process in
//! the middle of its own write transaction or of the engine's (the file recovers, tokens keep
//! growing). The children's roles are in `common/procs.rs`.

mod common;

use std::time::{Duration, Instant};

use alkstore_sqlite::SqliteConfig;
use common::procs::{Proc, config, wall_ns};
use common::{Scratch, raw, runtime};

/// The children's side: see `common/procs.rs`.
#[test]
fn child() {
    common::procs::child();
}

#[test]
fn kill_9_of_the_holder_hands_the_lease_to_the_head_waiter_at_the_deadline() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    runtime().block_on(async {
        // The default waiter heartbeat (1 s), not the children's 100 ms: the waiter's only
        // wake-up before the bound below is the one at the holder's deadline.
        let locks = alkstore_sqlite::open_with(&path, SqliteConfig::new())
            .await
            .unwrap();
        let mut holder = Proc::spawn("hold", &path, "");
        let held = holder.next();
        let mut f = held.split(' ').skip(1);
        let token: u64 = f.next().unwrap().parse().unwrap();
        let deadline: u64 = f.next().unwrap().parse().unwrap();
        let waiting = tokio::spawn({
            let locks = locks.clone();
            async move {
                let lock = locks
                    .acquire("x", "parent", Duration::from_secs(30))
                    .timeout(Duration::from_secs(10))
                    .await;
                (lock, wall_ns())
            }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        holder.kill_9();
        let (lock, at) = waiting.await.unwrap();
        let lock = lock
            .unwrap()
            .expect("granted after the dead holder's deadline");
        assert!(lock.token() > token, "the token outlives the dead process");
        assert!(at >= deadline, "never before the deadline");
        let late = Duration::from_nanos(at - deadline);
        eprintln!(
            "kill -9 of the holder: the head waiter in another process got the lease {late:?} \
             after the ttl (target 50 ms; asserted under 250 ms)"
        );
        // Measured 1.4-44 ms (30 runs under `nice -n 10` at load 10-11 on 2 cores; 2-3 ms
        // on a quiet one): the bound leaves room for a loaded machine's scheduling, not for
        // a missed wake-up at the deadline (the waiter's next step would be a heartbeat
        // later, 1 s).
        assert!(late < Duration::from_millis(250), "{late:?}");
    });
}

#[test]
fn kill_9_of_a_waiter_is_skipped() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    runtime().block_on(async {
        let locks = alkstore_sqlite::open_with(&path, config()).await.unwrap();
        let held = locks
            .try_lock("y", "parent", Duration::from_secs(30))
            .await
            .unwrap()
            .unwrap();
        let mut waiter = Proc::spawn("wait", &path, "");
        waiter.next();
        while locks.snapshot().await.unwrap().waiting.is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let second = tokio::spawn({
            let locks = locks.clone();
            async move {
                locks
                    .acquire("y", "second", Duration::from_secs(30))
                    .timeout(Duration::from_secs(10))
                    .await
            }
        });
        while locks.snapshot().await.unwrap().waiting.len() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        waiter.kill_9();
        let killed = Instant::now();
        assert!(held.release().await.unwrap());
        let lock = second
            .await
            .unwrap()
            .unwrap()
            .expect("the dead waiter was skipped");
        assert_eq!(lock.owner(), "second");
        eprintln!(
            "kill -9 of a waiter: skipped, the next got the lease {:?} after the kill \
             (heartbeat 100 ms, skipped after 3)",
            killed.elapsed()
        );
    });
}

#[test]
fn kill_9_in_the_middle_of_a_write_transaction_leaves_a_working_file() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    runtime().block_on(async {
        let locks = alkstore_sqlite::open_with(&path, config()).await.unwrap();
        let before = locks
            .try_lock("a", "o", Duration::from_secs(30))
            .await
            .unwrap()
            .unwrap();
        let mut writer = Proc::spawn("tx", &path, "");
        writer.next();
        writer.kill_9();
        let ghost = locks
            .try_lock("ghost", "o", Duration::from_secs(30))
            .await
            .unwrap()
            .expect("the killed transaction's row never committed");
        assert!(ghost.token() > before.token());
        let check: String = raw(&path)
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
        assert!(before.release().await.unwrap());
    });
}

#[test]
fn kill_9_during_the_engines_own_transactions_leaves_a_working_file_and_growing_tokens() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    runtime().block_on(async {
        let locks = alkstore_sqlite::open_with(&path, config()).await.unwrap();
        let mut last = 0;
        for round in 0..5u64 {
            let mut churn = Proc::spawn("churn", &path, "");
            churn.next();
            // Somewhere in its stream of transactions.
            let seen: u64 = churn.next().split(' ').nth(1).unwrap().parse().unwrap();
            std::thread::sleep(Duration::from_millis(20 + 17 * round));
            churn.kill_9();
            assert!(seen > last);
            let lock = locks
                .acquire("churn", "parent", Duration::from_secs(30))
                .timeout(Duration::from_secs(5))
                .await
                .unwrap()
                .expect("granted at the latest when the dead child's lease lapses");
            assert!(
                lock.token() > seen,
                "round {round}: {} after {seen}",
                lock.token()
            );
            last = lock.token();
            assert!(lock.release().await.unwrap());
        }
        let check: String = raw(&path)
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
    });
}
