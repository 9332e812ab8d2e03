//! Fencing in the user's own transaction on the same file: `lock.fence(&tx)` and
//! `locks.fence(&tx, &lease)` (the `alkstore_fence` SQL function: `fence_sql.rs`).

mod common;

use std::time::{Duration, Instant};

use alkstore_sqlite::FenceError;
use common::{Scratch, invoice_status as status, invoices, raw, runtime};
use rusqlite::{Connection, TransactionBehavior};

const TTL: Duration = Duration::from_secs(30);

#[test]
fn a_guarded_write_with_the_live_token_commits() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let locks = common::store_in(&dir, Default::default()).await;
        let mut conn = invoices(&dir.file("locks.db"));
        let lock = locks
            .try_lock("invoice/1001", "w1", TTL)
            .await
            .unwrap()
            .unwrap();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        lock.fence(&tx).expect("live");
        locks.fence(&tx, &lock.info()).expect("live, by lease");
        tx.execute("UPDATE invoices SET status = 'paid' WHERE id = 1001", [])
            .unwrap();
        tx.commit().unwrap();
        assert_eq!(status(&conn), "paid");
    });
}

#[test]
fn with_a_stale_token_nothing_commits() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let locks = common::store_in(&dir, Default::default()).await;
        let mut conn = invoices(&dir.file("locks.db"));
        let stale = locks
            .try_lock("invoice/1001", "w1", Duration::from_secs(2))
            .await
            .unwrap()
            .unwrap();
        locks
            .advance_test_clock(Duration::from_secs(3))
            .await
            .unwrap();
        // Lapsed, nobody took it yet.
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        match stale.fence(&tx) {
            Err(FenceError::Lapsed { name, token, ago }) => {
                assert_eq!((name.as_str(), token), ("invoice/1001", stale.token()));
                assert!(ago >= Duration::from_millis(900), "{ago:?}");
            }
            other => panic!("expected Lapsed, got {other:?}"),
        }
        drop(tx);
        // Taken over.
        let next = locks
            .try_lock("invoice/1001", "w2", TTL)
            .await
            .unwrap()
            .unwrap();
        assert!(next.token() > stale.token());
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        let refused = (|| -> rusqlite::Result<()> {
            tx.execute("UPDATE invoices SET status = 'stale' WHERE id = 1001", [])?;
            stale.fence(&tx)?;
            tx.execute("UPDATE invoices SET status = 'stale2' WHERE id = 1001", [])?;
            Ok(())
        })();
        let err = refused.expect_err("refused");
        assert!(
            err.to_string().contains("not held with fencing token"),
            "{err}"
        );
        drop(tx); // rolls back
        assert_eq!(
            status(&conn),
            "open",
            "nothing of the stale transaction committed"
        );
        // Outside a transaction the fence refuses too.
        assert!(matches!(
            locks.engine_fence_outside(&conn, &next),
            Err(FenceError::NotInTransaction)
        ));
    });
}

/// `locks.fence(&conn, ...)` on a connection in autocommit mode.
trait Outside {
    fn engine_fence_outside(
        &self,
        conn: &Connection,
        lock: &alkstore_sqlite::SqliteLock,
    ) -> Result<(), FenceError>;
}

impl Outside for alkstore_sqlite::SqliteLocks {
    fn engine_fence_outside(
        &self,
        conn: &Connection,
        lock: &alkstore_sqlite::SqliteLock,
    ) -> Result<(), FenceError> {
        self.fence(conn, &lock.info())
    }
}

#[test]
fn a_fenced_transaction_open_past_the_ttl_keeps_a_takeover_out_until_it_ends() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let path = dir.file("locks.db");
        let config =
            alkstore_sqlite::SqliteConfig::new().with_io_timeout(Duration::from_millis(300));
        let locks = common::store_in(&dir, config).await;
        let mut conn = invoices(&path);
        let ttl = Duration::from_millis(400);
        let lock = locks
            .try_lock("invoice/1001", "w1", ttl)
            .await
            .unwrap()
            .unwrap();
        let (tx_done, rx_done) = std::sync::mpsc::channel();
        let token = lock.token();
        let fence_locks = locks.clone();
        let info = lock.info();
        let holder = std::thread::spawn(move || {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .unwrap();
            fence_locks.fence(&tx, &info).expect("live");
            // Stalls past the ttl with the write lock.
            std::thread::sleep(Duration::from_millis(1200));
            tx.execute(
                "UPDATE invoices SET status = 'late but fenced' WHERE id = 1001",
                [],
            )
            .unwrap();
            // Taken before the commit: the thread may be descheduled between the commit and
            // any clock read after it, while the waiter is granted at once.
            let committing = Instant::now();
            tx.commit().unwrap();
            tx_done.send(committing).unwrap();
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        // Meanwhile: a try_lock cannot get in (busy: Unavailable), a waiter keeps its place.
        assert!(locks.try_lock("invoice/1001", "w2", ttl).await.is_err());
        let started = Instant::now();
        let next = locks
            .acquire("invoice/1001", "w2", TTL)
            .timeout(Duration::from_secs(10))
            .await
            .unwrap()
            .expect("granted once the transaction ended");
        let granted = Instant::now();
        // Exact, not by clocks: at the grant the fenced write is already committed (the
        // takeover's transaction could only start once the fenced one released the write lock).
        assert_eq!(
            status(&raw(&path)),
            "late but fenced",
            "no takeover before the fenced commit"
        );
        let committing = rx_done.recv().unwrap();
        holder.join().unwrap();
        assert!(
            granted >= committing,
            "no takeover before the fenced commit began"
        );
        assert!(next.token() > token);
        eprintln!(
            "takeover {:?} after the fenced commit began (waited {:?})",
            granted - committing,
            granted - started
        );
        drop(lock);
    });
}

/// A fence that finds the lease lapsed records it (in a transaction of the engine's own,
/// since the refused transaction is rolled back): after the clock steps back, the same
/// lease stays lapsed for fences and for the engine.
#[test]
fn a_lease_a_fence_saw_lapsed_stays_lapsed_after_the_clock_steps_back() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let path = dir.file("locks.db");
        let locks = common::store_in(&dir, Default::default()).await;
        let mut conn = invoices(&path);
        let lock = locks
            .try_lock("invoice/1001", "w1", Duration::from_secs(10))
            .await
            .unwrap()
            .unwrap();
        let step = |by: i64| {
            raw(&path)
                .execute(
                    "UPDATE alkstore_test_clock SET offset_us = offset_us + ?1",
                    [by],
                )
                .unwrap();
        };
        step(20_000_000);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        let refused = lock.fence(&tx);
        assert!(
            matches!(refused, Err(FenceError::Lapsed { .. })),
            "{refused:?}"
        );
        drop(tx); // rolled back, as a refusal asks
        let deadline_us = i64::try_from(lock.deadline().as_nanos() / 1000).unwrap();
        let start = Instant::now();
        loop {
            let floor: i64 = raw(&path)
                .query_row(
                    "SELECT deadline FROM alkstore_leases WHERE name = ''",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            if floor >= deadline_us {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the lapse the fence saw was never recorded"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        step(-20_000_000);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        let again = lock.fence(&tx);
        assert!(matches!(again, Err(FenceError::Lapsed { .. })), "{again:?}");
        drop(tx);
        assert!(!lock.is_held().await.unwrap(), "lapsed stays lapsed");
    });
}
