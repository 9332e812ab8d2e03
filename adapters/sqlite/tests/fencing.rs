//! Fencing in the user's own transaction on the same file: `lock.fence(&tx)`,
//! `locks.fence(&tx, &lease)`, and the `alkstore_fence` SQL function in a trigger.

mod common;

use std::time::{Duration, Instant};

use alkstore_sqlite::{FenceError, SqliteConfig};
use common::{Scratch, raw, runtime};
use rusqlite::{Connection, TransactionBehavior};

const TTL: Duration = Duration::from_secs(30);

fn invoices(path: &std::path::Path) -> Connection {
    let conn = raw(path);
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS invoices (id INTEGER PRIMARY KEY, status TEXT, token INTEGER);
         INSERT OR IGNORE INTO invoices VALUES (1001, 'open', 0);",
    )
    .unwrap();
    conn
}

fn status(conn: &Connection) -> String {
    conn.query_row("SELECT status FROM invoices WHERE id = 1001", [], |r| {
        r.get(0)
    })
    .unwrap()
}

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
fn alkstore_fence_in_a_trigger_refuses_a_stale_write_from_plain_sql() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let path = dir.file("locks.db");
        let locks = common::store_in(&dir, Default::default()).await;
        let conn = invoices(&path);
        alkstore_sqlite::install_fence(&conn).unwrap();
        conn.execute_batch(
            "CREATE TRIGGER invoices_fenced BEFORE UPDATE ON invoices
             BEGIN SELECT alkstore_fence('invoice/' || NEW.id, NEW.token); END;",
        )
        .unwrap();
        let old = locks
            .try_lock("invoice/1001", "w1", TTL)
            .await
            .unwrap()
            .unwrap();
        let old_token = old.token();
        conn.execute(
            "UPDATE invoices SET status = 'sent', token = ?1 WHERE id = 1001",
            [old_token as i64],
        )
        .expect("live token: the plain statement commits");
        assert_eq!(status(&conn), "sent");
        locks.force_release("invoice/1001").await.unwrap().unwrap();
        let new = locks
            .try_lock("invoice/1001", "w2", TTL)
            .await
            .unwrap()
            .unwrap();
        let err = conn
            .execute(
                "UPDATE invoices SET status = 'stale', token = ?1 WHERE id = 1001",
                [old_token as i64],
            )
            .expect_err("refused by the trigger");
        assert!(err.to_string().contains("alkstore fence"), "{err}");
        assert_eq!(status(&conn), "sent");
        // A connection that never installed the function cannot write either.
        let bare = raw(&path);
        assert!(
            bare.execute(
                "UPDATE invoices SET status = 'x', token = ?1 WHERE id = 1001",
                [new.token() as i64]
            )
            .is_err()
        );
        conn.execute(
            "UPDATE invoices SET status = 'paid', token = ?1 WHERE id = 1001",
            [new.token() as i64],
        )
        .expect("the new holder writes");
        assert_eq!(status(&conn), "paid");
        drop(old);
    });
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
            tx.commit().unwrap();
            tx_done.send(Instant::now()).unwrap();
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
        let committed = rx_done.recv().unwrap();
        holder.join().unwrap();
        assert!(granted >= committed, "no takeover before the fenced commit");
        assert!(next.token() > token);
        assert_eq!(status(&raw(&path)), "late but fenced");
        eprintln!(
            "takeover {:?} after the fenced commit (waited {:?})",
            granted - committed,
            granted - started
        );
        drop(lock);
    });
}

/// `install_fence_in` took any string as the namespace and pasted it into SQL inside double
/// quotes: a namespace with a quote ran the text after it as SQL. It must refuse what
/// `with_namespace` refuses.
#[test]
fn install_fence_in_refuses_a_namespace_that_is_sql() {
    let dir = Scratch::new();
    let conn = raw(&dir.file("app.db"));
    for ns in [
        "x\" ; DROP TABLE t; --",
        "alkstore_state\" WHERE 0 UNION SELECT 1, 2, 3 --",
        "has space",
        "",
        "1abc",
    ] {
        assert!(
            alkstore_sqlite::install_fence_in(&conn, ns).is_err(),
            "namespace {ns:?} accepted"
        );
    }
    assert!(alkstore_sqlite::install_fence_in(&conn, "jobs_2").is_ok());
}

/// `alkstore_fence` with NULL or wrong types fails its statement; it never panics and never
/// answers 1.
#[test]
fn alkstore_fence_with_null_or_wrong_types_fails_the_statement() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let locks = common::store_in(&dir, SqliteConfig::new()).await;
        let lock = locks.try_lock("n", "o", TTL).await.unwrap().unwrap();
        let conn = raw(&dir.file("locks.db"));
        alkstore_sqlite::install_fence(&conn).unwrap();
        let token = i64::try_from(lock.token()).unwrap();
        let ok: i64 = conn
            .query_row("SELECT alkstore_fence('n', ?1)", [token], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, 1);
        for sql in [
            "SELECT alkstore_fence(NULL, NULL)",
            "SELECT alkstore_fence('n', NULL)",
            "SELECT alkstore_fence(NULL, 1)",
            "SELECT alkstore_fence('n', 'abc')",
            "SELECT alkstore_fence('n', 1.5)",
            "SELECT alkstore_fence('n', -1)",
            "SELECT alkstore_fence(x'00ff', 1)",
        ] {
            assert!(
                conn.query_row(sql, [], |r| r.get::<_, i64>(0)).is_err(),
                "{sql} passed"
            );
        }
        lock.release().await.unwrap();
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

/// What the SQL function says when it refuses: the `alkstore fence:` prefix, the namespace
/// it looked in, a negative token named as such.
#[test]
fn alkstore_fence_refusals_say_where_it_looked_and_what_was_wrong() {
    runtime().block_on(async {
        let dir = Scratch::new();
        let config = SqliteConfig::new().with_namespace("jobs");
        let locks = common::store_in(&dir, config).await;
        let lock = locks.try_lock("p2", "w1", TTL).await.unwrap().unwrap();
        let conn = raw(&dir.file("locks.db"));
        alkstore_sqlite::install_fence(&conn).unwrap();
        let ask = |token: i64| {
            conn.query_row("SELECT alkstore_fence('p2', ?1)", [token], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap_err()
            .to_string()
        };
        let token = i64::try_from(lock.token()).unwrap();
        let other_namespace = ask(token);
        assert!(
            other_namespace.starts_with("alkstore fence:")
                && other_namespace.contains("\"alkstore\"")
                && other_namespace.contains("install_fence_in"),
            "{other_namespace}"
        );
        let negative = ask(-1);
        assert!(
            negative.starts_with("alkstore fence:")
                && negative.contains("-1 given for lock \"p2\" is negative"),
            "{negative}"
        );
        alkstore_sqlite::install_fence_in(&conn, "jobs").unwrap();
        let passed: i64 = conn
            .query_row("SELECT alkstore_fence('p2', ?1)", [token], |r| r.get(0))
            .unwrap();
        assert_eq!(passed, 1);
    });
}
