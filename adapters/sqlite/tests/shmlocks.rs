//! SQLite's locks on the `-shm` file (the WAL write lock, the read marks) are POSIX record
//! locks: closing ANY descriptor of that file drops ALL of this process's locks on it,
//! including those of connections the store does not own (the user's own connection, in a
//! fenced transaction). The wake-up watcher reads the `-shm` header through a descriptor
//! outside SQLite: when the watcher ends (the store dropped, its runtime shut down, a restart),
//! another process must still find the user's write lock taken. The children's roles are in
//! `common/procs.rs`.

mod common;

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use alkstore_sqlite::SqliteLocks;
use common::procs::{Proc, config};
use common::{Scratch, raw, runtime};

/// The children's side: see `common/procs.rs`.
#[test]
fn child() {
    common::procs::child();
}

/// The tests of this binary look at the process's threads and descriptors: one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The ids of this process's threads named `alkstore-sqlite` (the engine's thread and the
/// watcher's, whose longer name the kernel cuts to the same 15 bytes).
fn sqlite_threads() -> HashSet<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| {
            let task = task.ok()?;
            let comm = std::fs::read_to_string(task.path().join("comm")).ok()?;
            (comm.trim_end() == "alkstore-sqlite").then(|| task.file_name().into_string().ok())?
        })
        .collect()
}

/// Starts the store's watcher (a waiter that times out after `wait_ms`) and returns its
/// thread's id.
async fn start_watcher(locks: &SqliteLocks, wait_ms: u64) -> String {
    let before = sqlite_threads();
    let holder = locks
        .try_lock("x", "A", Duration::from_secs(60))
        .await
        .unwrap()
        .expect("free");
    let waited = locks
        .acquire("x", "B", Duration::from_secs(60))
        .timeout(Duration::from_millis(wait_ms))
        .await
        .unwrap();
    assert!(waited.is_none(), "x is held");
    assert!(holder.release().await.unwrap());
    let started: Vec<String> = sqlite_threads().difference(&before).cloned().collect();
    assert_eq!(started.len(), 1, "one watcher thread started: {started:?}");
    started.into_iter().next().unwrap()
}

/// Waits until thread `tid` of this process has ended.
fn ended(tid: &str) {
    let began = Instant::now();
    while Path::new("/proc/self/task").join(tid).exists() {
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "the watcher thread {tid} did not end"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What a child process says when it tries `BEGIN IMMEDIATE` on `path` (busy timeout 200 ms):
/// "busy" while a connection of this process holds the WAL write lock.
fn another_process_begins(path: &Path) -> String {
    let mut other = Proc::spawn("begin_immediate", path, "200");
    let said = other.next();
    other.wait_ok();
    said
}

/// The user's connection, with invoice 1001 unpaid.
fn user(path: &Path) -> rusqlite::Connection {
    let conn = raw(path);
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS invoices (id INTEGER PRIMARY KEY, paid INTEGER);
         INSERT OR REPLACE INTO invoices VALUES (1001, 0);",
    )
    .unwrap();
    conn
}

/// A write transaction on the user's connection, left open.
fn begin_write(user: &rusqlite::Connection) {
    user.execute_batch("BEGIN IMMEDIATE; UPDATE invoices SET paid = 1 WHERE id = 1001;")
        .unwrap();
}

#[test]
fn a_dropped_store_leaves_the_users_write_lock_in_place() {
    let _one = serial();
    let dir = Scratch::new();
    let path = dir.file("app.db");
    let rt = runtime();
    let locks = rt
        .block_on(alkstore_sqlite::open_with(&path, config()))
        .unwrap();
    let user = user(&path);
    let watcher = rt.block_on(start_watcher(&locks, 300));
    begin_write(&user);
    assert_eq!(
        another_process_begins(&path),
        "busy",
        "while the store is open"
    );

    rt.block_on(async move { drop(locks) });
    ended(&watcher);
    assert_eq!(
        another_process_begins(&path),
        "busy",
        "after the store's watcher ended, the user's transaction still holds the write lock"
    );
    user.execute_batch("COMMIT").unwrap();
    assert_eq!(another_process_begins(&path), "took", "once committed");
}

#[test]
fn a_watcher_that_ends_and_restarts_leaves_the_users_write_lock_in_place() {
    let _one = serial();
    let dir = Scratch::new();
    let path = dir.file("app.db");
    let home = runtime();
    let locks = home
        .block_on(alkstore_sqlite::open_with(&path, config()))
        .unwrap();
    let user = user(&path);
    let first = home.block_on(start_watcher(&locks, 300));
    begin_write(&user);
    // The store's runtime shuts down: its listener task is dropped, the watcher ends, the
    // store lives on.
    drop(home);
    ended(&first);
    assert_eq!(
        another_process_begins(&path),
        "busy",
        "after the first watcher ended"
    );
    user.execute_batch("COMMIT").unwrap();

    // The listener starts again on the runtime the store is used from next.
    let next = runtime();
    let second = next.block_on(start_watcher(&locks, 300));
    begin_write(&user);
    next.block_on(async move { drop(locks) });
    ended(&second);
    assert_eq!(
        another_process_begins(&path),
        "busy",
        "after the restarted watcher ended"
    );
    user.execute_batch("COMMIT").unwrap();
}

/// The open descriptors of this process.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn opening_and_closing_stores_in_a_loop_keeps_the_descriptors_bounded() {
    let _one = serial();
    let dir = Scratch::new();
    let rt = runtime();
    let same = dir.file("same.db");
    let run = |path: &Path| {
        let locks = rt
            .block_on(alkstore_sqlite::open_with(path, config()))
            .unwrap();
        let watcher = rt.block_on(start_watcher(&locks, 50));
        rt.block_on(async move { drop(locks) });
        ended(&watcher);
    };
    // Warm up (the runtime's threads, the first entries), then count.
    run(&same);
    let before = open_fds();
    for i in 0..200 {
        if i % 2 == 0 {
            run(&same);
        } else {
            // A new file each time, deleted after use: its -shm goes with it.
            let path = dir.file(&format!("fresh-{i}.db"));
            run(&path);
            for suffix in ["", "-wal", "-shm"] {
                let mut name = path.clone().into_os_string();
                name.push(suffix);
                let _ = std::fs::remove_file(name);
            }
        }
    }
    let after = open_fds();
    println!("open descriptors: {before} before, {after} after 200 stores");
    assert!(
        after <= before + 4,
        "descriptors grow with the stores opened: {before} before, {after} after"
    );
}
