//! The shared conformance suite (`alkstore-mem-conformance`) on SQLite: the same test bodies
//! as the in-memory engine, each on a fresh file in a scratch directory, with time moved by
//! the test-only offset in the file (this crate's `test-clock` feature, on for its own tests).

mod common;

use std::future::Future;
use std::time::Duration;

use alkstore_mem_conformance::{Engine, Limits};
use alkstore_sqlite::{SqliteConfig, SqliteLocks};

/// The SQLite engine for the suite: every `open` is a fresh file in this process's scratch
/// directory (`alkstore-sqlite-conformance-<pid>` under the temp dir: a store may outlive its
/// body, so the files stay until the process ends; the directories of processes that ended
/// are removed by the next run); `advance` raises the file's clock offset and rings the `*`
/// bell.
struct Sqlite;

/// This process's scratch directory, made once (after removing those of ended processes).
fn scratch_root() -> &'static std::path::Path {
    static ROOT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let tmp = std::env::temp_dir();
        let prefix = "alkstore-sqlite-conformance-";
        for entry in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix(prefix) {
                if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        let root = tmp.join(format!("{prefix}{}", std::process::id()));
        std::fs::create_dir_all(&root).expect("a scratch dir");
        root
    })
}

impl Engine for Sqlite {
    type Store = SqliteLocks;

    async fn open(&self, limits: Limits) -> SqliteLocks {
        let config = SqliteConfig::new()
            .with_max_name_len(limits.max_name_len)
            .with_max_owner_len(limits.max_owner_len);
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        alkstore_sqlite::open_with(scratch_root().join(format!("{n}.db")), config)
            .await
            .expect("the file opens")
    }

    async fn advance(&self, store: &SqliteLocks, by: Duration) {
        store
            .advance_test_clock(by)
            .await
            .expect("the file answers");
        // The wake-up travels through the file: give this process's sleepers a moment to
        // re-check before the test body goes on.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A current-thread runtime: spawned tasks run in the order they were spawned, so a waiter's
/// step, spawned before the settle that follows it, reaches the connection thread first (on
/// a loaded multi-thread runtime the LIFO slot can let the settles overtake it, and then
/// `queue` returns before the waiter is in line).
fn run(test: impl Future<Output = ()>) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(test);
}

alkstore_mem_conformance::conformance_suite!(engine = Sqlite, run = run);
