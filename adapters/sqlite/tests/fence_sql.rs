//! Fencing from SQL: the `alkstore_fence(name, token)` function that `install_fence` and
//! `install_fence_in` register, in a trigger and in plain statements (`lock.fence(&tx)` and
//! `locks.fence(&tx, &lease)`: `fencing.rs`).

mod common;

use std::time::Duration;

use alkstore_sqlite::SqliteConfig;
use common::{Scratch, invoice_status as status, invoices, raw, runtime};

const TTL: Duration = Duration::from_secs(30);

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
             BEGIN SELECT alkstore_fence('invoice/' || NEW.id, NEW.token); END;
             CREATE TRIGGER invoices_fenced_insert BEFORE INSERT ON invoices
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
        // INSERT OR REPLACE deletes and inserts, firing no UPDATE trigger: the README's
        // INSERT trigger refuses it (a hostile review's finding: with the UPDATE trigger
        // alone it committed).
        let err = conn
            .execute(
                "INSERT OR REPLACE INTO invoices (id, status, token) VALUES (1001, 'stale', ?1)",
                [old_token as i64],
            )
            .expect_err("refused by the insert trigger");
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
            let refused = conn.query_row(sql, [], |r| r.get::<_, i64>(0));
            let err = refused.expect_err(sql).to_string();
            assert!(err.contains("alkstore fence:"), "{sql}: {err}");
        }
        let err = conn
            .query_row("SELECT alkstore_fence('n', 'abc')", [], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("a text name and an integer token, not a text and a text"),
            "{err}"
        );
        lock.release().await.unwrap();
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
