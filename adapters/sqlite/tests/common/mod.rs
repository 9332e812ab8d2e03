//! Helpers shared by the SQLite test suites: scratch directories, runtimes, raw connections.
#![allow(dead_code, reason = "each test binary uses part of it")]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use alkstore_sqlite::{SqliteConfig, SqliteLocks};

pub mod procs;

/// A multi-thread tokio runtime with two workers, time and I/O: what the suites run on.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// A scratch directory (under the system temp dir), removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new() -> Scratch {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "alkstore-sqlite-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch dir");
        Scratch(dir)
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A store on a fresh file in `scratch`.
pub async fn store_in(scratch: &Scratch, config: SqliteConfig) -> SqliteLocks {
    alkstore_sqlite::open_with(scratch.file("locks.db"), config)
        .await
        .expect("the file opens")
}

/// A plain connection to `path`, for tests that poke at the file.
pub fn raw(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).expect("opens");
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    conn
}

/// A raw connection to `path` with the `invoices` table of the fencing suites (invoice 1001,
/// status `open`, token 0), made if missing.
pub fn invoices(path: &Path) -> rusqlite::Connection {
    let conn = raw(path);
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS invoices (id INTEGER PRIMARY KEY, status TEXT, token INTEGER);
         INSERT OR IGNORE INTO invoices VALUES (1001, 'open', 0);",
    )
    .unwrap();
    conn
}

/// The status of invoice 1001.
pub fn invoice_status(conn: &rusqlite::Connection) -> String {
    conn.query_row("SELECT status FROM invoices WHERE id = 1001", [], |r| {
        r.get(0)
    })
    .unwrap()
}
