//! `make demo-pg`: three OS processes share `invoice/1001` on one PostgreSQL.
//!
//! - `worker-a` takes the lock (1 s lease) and stalls for 1.6 s: a GC pause, a slow disk.
//! - `worker-b` was waiting: at a's deadline the lease is its, with a larger fencing token; in
//!   one transaction it calls `fence()` and writes the invoice, then releases, which hands
//!   the lease to `worker-c`, waiting behind it, who does the same.
//! - `worker-a` wakes up and tries its write the same way: the database itself refuses it,
//!   inside a's transaction, because `fence()` finds a's lease no longer live (SQLSTATE
//!   55F01), so nothing of a's commits. Its renew says Expired.
//!
//! The coordinator (this binary without arguments) starts the three processes, checks what
//! each reports and what the table holds, and exits non-zero if anything differs.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use alkstore_mem::LockError;
use alkstore_pg::{PgConfig, PgLock, PgLocks, is_fence_error};

const NAME: &str = "invoice/1001";
const LEASE: Duration = Duration::from_millis(1000);

fn url() -> String {
    std::env::var("ALKSTORE_PG_URL")
        .expect("ALKSTORE_PG_URL is not set: run `make demo-pg`, which starts a cluster")
}

async fn client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// The guarded write: `fence()` first, in the same transaction. True if it committed.
async fn fenced_write(client: &mut tokio_postgres::Client, schema: &str, lock: &PgLock) -> bool {
    let tx = client.transaction().await.unwrap();
    if let Err(e) = lock.fence(&tx).await {
        assert!(is_fence_error(&e), "{e:?}");
        println!(
            "{} refused-by {}",
            lock.owner(),
            e.as_db_error().unwrap().message()
        );
        return false; // the transaction rolls back when dropped: nothing commits
    }
    let token = i64::try_from(lock.token()).unwrap();
    tx.execute(
        &format!(
            "INSERT INTO \"{schema}\".invoices VALUES (1001, $1, $2)
             ON CONFLICT (id) DO UPDATE SET paid_by = EXCLUDED.paid_by, token = EXCLUDED.token"
        ),
        &[&lock.owner(), &token],
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    true
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("worker") => worker(&args[2], &args[3]).await,
        _ => coordinate().await,
    }
}

/// One worker process: `who` in schema `schema`. Prints `<who> <event> <token>` lines.
async fn worker(who: &str, schema: &str) {
    let url = url();
    let locks = PgLocks::connect_with(&url, PgConfig::new().with_schema(schema))
        .await
        .unwrap();
    let mut db = client(&url).await;
    let owner = format!("worker-{who}");
    let mut lock = locks
        .acquire(NAME, &owner, LEASE)
        .timeout(Duration::from_secs(10))
        .await
        .unwrap()
        .expect("granted within 10 s");
    let token = lock.token();
    println!("{who} holds {token}");
    if who == "a" {
        tokio::time::sleep(LEASE * 8 / 5).await; // stalls past its lease
        let written = fenced_write(&mut db, schema, &lock).await;
        println!(
            "{who} {} {token}",
            if written { "wrote" } else { "refused" }
        );
        let renewed = lock.renew(LEASE).await;
        assert!(
            matches!(renewed, Err(LockError::Expired { .. })),
            "{renewed:?}"
        );
        println!("{who} expired {token}");
        assert!(
            !lock.release().await.unwrap(),
            "a lapsed lease releases as false"
        );
    } else {
        let written = fenced_write(&mut db, schema, &lock).await;
        println!(
            "{who} {} {token}",
            if written { "wrote" } else { "refused" }
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(lock.release().await.unwrap());
    }
}

type Lines = std::io::Lines<BufReader<std::process::ChildStdout>>;

fn spawn(who: &str, schema: &str) -> (Child, Lines) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["worker", who, schema])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    (child, lines)
}

fn expect(lines: &mut Lines, who: &str, event: &str) -> u64 {
    loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("{who} ended early"))
            .unwrap();
        if let Some(message) = line.strip_prefix(&format!("worker-{who} refused-by ")) {
            println!("  worker-{who}: the database said: {message}");
            continue;
        }
        let parts: Vec<&str> = line.split(' ').collect();
        assert_eq!((parts[0], parts[1]), (who, event), "unexpected: {line}");
        println!("  worker-{who}: {event} (token {})", parts[2]);
        return parts[2].parse().unwrap();
    }
}

async fn coordinate() {
    let url = url();
    let schema = format!("demo{}", std::process::id());
    // Install the schema, and the table the lock guards, in the same database.
    PgLocks::connect_with(&url, PgConfig::new().with_schema(&schema))
        .await
        .unwrap();
    let db = client(&url).await;
    db.batch_execute(&format!(
        "CREATE TABLE \"{schema}\".invoices (id int PRIMARY KEY, paid_by text NOT NULL, token bigint NOT NULL)"
    ))
    .await
    .unwrap();
    println!("three processes share {NAME:?} with {LEASE:?} leases (schema {schema:?})");
    let (mut a, mut a_out) = spawn("a", &schema);
    let a_token = expect(&mut a_out, "a", "holds");
    let (mut b, mut b_out) = spawn("b", &schema);
    tokio::time::sleep(Duration::from_millis(300)).await; // b queues first, then c
    let (mut c, mut c_out) = spawn("c", &schema);
    println!(
        "  worker-a stalls for {:?}, past its lease; b and c wait in line",
        LEASE * 8 / 5
    );
    let b_token = expect(&mut b_out, "b", "holds");
    expect(&mut b_out, "b", "wrote");
    let c_token = expect(&mut c_out, "c", "holds");
    expect(&mut c_out, "c", "wrote");
    expect(&mut a_out, "a", "refused");
    expect(&mut a_out, "a", "expired");
    for (who, child) in [("a", &mut a), ("b", &mut b), ("c", &mut c)] {
        assert!(child.wait().unwrap().success(), "worker-{who} failed");
    }
    assert!(
        a_token < b_token && b_token < c_token,
        "{a_token} < {b_token} < {c_token}"
    );
    let rows = db
        .query(
            &format!("SELECT paid_by, token FROM \"{schema}\".invoices"),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    let (paid_by, token): (String, i64) = (rows[0].get(0), rows[0].get(1));
    assert_eq!(
        (paid_by.as_str(), token),
        ("worker-c", i64::try_from(c_token).unwrap())
    );
    println!(
        "the table holds worker-c's write (token {token}); the database refused worker-a's stale write"
    );
    db.batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .await
        .unwrap();
    println!("demo-pg: OK");
}
