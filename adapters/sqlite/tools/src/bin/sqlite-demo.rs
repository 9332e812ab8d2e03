//! `make demo-sqlite`: three OS processes share `invoice/1001` in one SQLite file that also
//! holds the `invoices` table, with no server.
//!
//! - `worker-a` takes the lock (1 s lease) and stalls for 1.6 s: a GC pause, a slow disk.
//! - `worker-b` was waiting: at a's deadline the lease is its, with a larger fencing token; in
//!   one `BEGIN IMMEDIATE` transaction it calls `lock.fence(&tx)` and writes the invoice, then
//!   releases, which hands the lease to `worker-c`, waiting behind it, who does the same.
//! - `worker-a` wakes up and tries its write with plain SQL: the file itself refuses it, by
//!   the trigger that calls `alkstore_fence(name, token)` before any update of the invoice,
//!   because a's token is no longer the live lease's. Nothing of a's commits.
//!
//! The coordinator (this binary without arguments) makes the file, starts the three
//! processes, checks what each reports and what the table holds, and exits non-zero if
//! anything differs.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use alkstore_sqlite::SqliteLock;
use rusqlite::{Connection, TransactionBehavior};

const NAME: &str = "invoice/1001";
const LEASE: Duration = Duration::from_millis(1000);

fn connect(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    alkstore_sqlite::install_fence(&conn).unwrap();
    conn
}

/// The guarded write, the careful way: `fence` first, in the same IMMEDIATE transaction.
fn fenced_write(conn: &mut Connection, lock: &SqliteLock) -> bool {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .unwrap();
    if let Err(e) = lock.fence(&tx) {
        println!("{} refused-by {e}", lock.owner());
        return false;
    }
    tx.execute(
        "UPDATE invoices SET paid_by = ?1, token = ?2 WHERE id = 1001",
        (lock.owner(), lock.token() as i64),
    )
    .unwrap();
    tx.commit().unwrap();
    true
}

async fn worker(who: &str, path: &Path) {
    let locks = alkstore_sqlite::open(path).await.unwrap();
    let mut conn = connect(path);
    let lock = locks
        .acquire(NAME, who, LEASE)
        .timeout(Duration::from_secs(20))
        .await
        .unwrap()
        .expect("granted within 20 s");
    println!("{who} holds token {}", lock.token());
    if who == "worker-a" {
        // Stalls past its lease (no keep_alive), then writes with plain SQL, as any client
        // of the file might: the trigger checks the token.
        tokio::time::sleep(Duration::from_millis(1600)).await;
        match conn.execute(
            "UPDATE invoices SET paid_by = ?1, token = ?2 WHERE id = 1001",
            (who, lock.token() as i64),
        ) {
            Ok(_) => println!("{who} wrote (must not happen)"),
            Err(e) => println!("{who} refused-by {e}"),
        }
        println!("{who} release {}", lock.release().await.unwrap());
        return;
    }
    if fenced_write(&mut conn, &lock) {
        println!("{who} wrote with token {}", lock.token());
    }
    println!("{who} release {}", lock.release().await.unwrap());
}

fn spawn(who: &str, path: &Path) -> (Child, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([who, &path.display().to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    (child, out)
}

fn read_all(who: &str, mut child: Child, out: BufReader<std::process::ChildStdout>) -> Vec<String> {
    let lines: Vec<String> = out.lines().map(Result::unwrap).collect();
    assert!(child.wait().unwrap().success(), "{who} failed");
    lines
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(worker(&args[1], Path::new(&args[2])));
        return;
    }
    let scratch = alkstore_sqlite_tools::Scratch::new("demo");
    let path = scratch.0.join("shop.db");
    println!("one file, no server: {}", path.display());
    {
        let conn = connect(&path);
        conn.execute_batch(
            "CREATE TABLE invoices (id INTEGER PRIMARY KEY, paid_by TEXT, token INTEGER NOT NULL);
             INSERT INTO invoices VALUES (1001, NULL, 0);
             -- The file refuses a write with a token that is not the live lease's.
             CREATE TRIGGER invoices_fenced BEFORE UPDATE ON invoices
             BEGIN SELECT alkstore_fence('invoice/' || NEW.id, NEW.token); END;",
        )
        .unwrap();
    }
    let (a, mut a_out) = spawn("worker-a", &path);
    let mut first = String::new();
    a_out.read_line(&mut first).unwrap();
    print!("{first}");
    let (b, b_out) = spawn("worker-b", &path);
    std::thread::sleep(Duration::from_millis(200));
    let (c, c_out) = spawn("worker-c", &path);
    let a_lines = read_all("worker-a", a, a_out);
    let b_lines = read_all("worker-b", b, b_out);
    let c_lines = read_all("worker-c", c, c_out);
    for line in a_lines.iter().chain(&b_lines).chain(&c_lines) {
        println!("{line}");
    }
    let token = |line: &str| -> u64 { line.rsplit(' ').next().unwrap().parse().unwrap() };
    let ta = token(first.trim());
    let tb = token(&b_lines[0]);
    let tc = token(&c_lines[0]);
    assert!(ta < tb && tb < tc, "tokens {ta} < {tb} < {tc}");
    assert!(
        a_lines
            .iter()
            .any(|l| l.contains("refused-by") && l.contains("alkstore fence")),
        "a's stale write is refused: {a_lines:?}"
    );
    assert!(a_lines.iter().any(|l| l == "worker-a release false"));
    assert!(b_lines.iter().any(|l| l.starts_with("worker-b wrote")));
    assert!(c_lines.iter().any(|l| l.starts_with("worker-c wrote")));
    let (paid_by, stored): (String, i64) = connect(&path)
        .query_row(
            "SELECT paid_by, token FROM invoices WHERE id = 1001",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((paid_by.as_str(), stored as u64), ("worker-c", tc));
    println!(
        "invoice 1001: paid_by {paid_by}, token {stored}: the stalled worker's write never landed"
    );
}
