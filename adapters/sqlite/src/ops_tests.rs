//! The operations on one connection, run directly (no kit): a request withdrawn before its
//! first statement never gets a grant; the kept statements stay usable after an error.

use std::time::{Duration, Instant};

use alkstore_kit::{Step, StepReply, WaitDeadline};

use crate::config::SqliteConfig;
use crate::db::Db;
use crate::stmts::Statements;

fn scratch(tag: &str) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("alkstore-sqlite-unit-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn until() -> Instant {
    Instant::now() + Duration::from_secs(5)
}

fn step<'a>(name: &'a str, id: &'a str) -> Step<'a> {
    Step {
        name,
        owner: "w",
        ttl: Duration::from_secs(60),
        id,
        wait_left: None,
        deadline: WaitDeadline::First,
        heartbeat_expiry: Duration::from_secs(3),
    }
}

#[test]
fn a_request_withdrawn_before_its_first_statement_is_never_granted_nor_queued() {
    let dir = scratch("withdrawn");
    let db = Db::open(&dir.join("locks.db"), &SqliteConfig::new(), true).unwrap();
    let st = Statements::new(&db.conn, &db.sql);
    for i in 0..50 {
        let (name, rid) = (format!("n{i}"), format!("r{i}"));
        db.write(&st, until(), &name, "", |tx| tx.withdraw(&name, &rid, true))
            .unwrap();
        // try_lock with the withdrawn id, the free name: nothing.
        let reply = db
            .write(&st, until(), &name, &rid, |tx| {
                tx.try_lock(&name, "o", 60_000_000, &rid)
            })
            .unwrap();
        assert_eq!(
            reply.value, None,
            "try_lock {rid} granted after its withdrawal"
        );
        // A step with the withdrawn id: over, never granted, never queued.
        let answer = db
            .write(&st, until(), &name, &rid, |tx| tx.step(&step(&name, &rid)))
            .unwrap();
        assert_eq!(answer, StepReply::Over, "step {rid} after its withdrawal");
        // Another id on the same name, both ways: granted (the look is per id).
        let other = format!("x{i}");
        let reply = db
            .write(&st, until(), &name, &other, |tx| {
                tx.try_lock(&name, "o", 60_000_000, &other)
            })
            .unwrap();
        assert!(reply.value.is_some(), "a fresh id refused on a free name");
        let held: i64 = db
            .conn
            .query_row(
                "SELECT count(*) FROM alkstore_leases WHERE owner IS NOT NULL AND req = ?1",
                [&rid],
                |r| r.get(0),
            )
            .unwrap();
        let queued: i64 = db
            .conn
            .query_row("SELECT count(*) FROM alkstore_waiters", [], |r| r.get(0))
            .unwrap();
        assert_eq!((held, queued), (0, 0));
    }
    drop(st);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}
