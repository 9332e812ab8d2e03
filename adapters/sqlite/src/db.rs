//! The database file: opening it (checks, WAL, the versioned schema), the bounded wait for
//! SQLite's write lock, and one `BEGIN IMMEDIATE` transaction per operation with the lease
//! clock read inside it.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use alkstore_kit::unavailable;
use alkstore_mem::LockError;
use rusqlite::{Connection, ErrorCode, OpenFlags, params};

use crate::config::{SqliteConfig, Synchronous, valid_namespace};

/// The version of the tables this build writes and reads.
pub(crate) const SCHEMA_VERSION: i64 = 1;
/// What `<namespace>_meta` says under `engine` in a file of ours.
const ENGINE_MARK: &str = "alkstore-sqlite";
/// The longest ttl kept: 100 years (longer ones are cut), so deadlines stay far from overflow.
pub(crate) const MAX_TTL_US: i64 = 100 * 365 * 24 * 3600 * 1_000_000;

thread_local! {
    /// Until when this thread's connection waits for SQLite's write lock (see [`busy`]).
    static BUSY_UNTIL: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The busy handler of every connection the engine opens: waits in short sleeps (0.1 ms,
/// then 1 ms) while the thread's deadline is ahead, so a lock freed by another process is
/// taken within about a millisecond, and gives up (`SQLITE_BUSY`) at the deadline.
fn busy(tries: i32) -> bool {
    let Some(until) = BUSY_UNTIL.with(Cell::get) else {
        return false;
    };
    let now = Instant::now();
    if now >= until {
        return false;
    }
    let pause = if tries < 20 {
        Duration::from_micros(100)
    } else {
        Duration::from_millis(1)
    };
    std::thread::sleep(pause.min(until - now));
    true
}

/// Sets the bound on waiting for the write lock for calls made on this thread from now on.
pub(crate) fn wait_until(until: Option<Instant>) {
    BUSY_UNTIL.with(|cell| cell.set(until));
}

/// The wall clock in µs since the Unix epoch (0 before it).
pub(crate) fn wall_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// A duration in µs for the tables: at least 1 µs, at most [`MAX_TTL_US`].
pub(crate) fn duration_us(d: Duration) -> i64 {
    i64::try_from(d.as_micros())
        .unwrap_or(i64::MAX)
        .clamp(1, MAX_TTL_US)
}

/// Why an operation failed.
#[derive(Debug)]
pub(crate) enum DbError {
    /// Another connection held the write lock for the whole wait.
    Busy(Duration),
    /// Anything else SQLite said.
    Sqlite(rusqlite::Error),
    /// The connection thread is gone or failed.
    Other(&'static str),
}

impl From<rusqlite::Error> for DbError {
    fn from(err: rusqlite::Error) -> Self {
        if is_busy(&err) {
            DbError::Busy(Duration::ZERO)
        } else {
            DbError::Sqlite(err)
        }
    }
}

impl DbError {
    /// As the contract's error.
    pub(crate) fn into_lock_error(self) -> LockError {
        match self {
            DbError::Busy(waited) => unavailable(format!(
                "sqlite: the database file is locked by another connection's write \
                 transaction (waited {waited:?}, the io_timeout's bound)"
            )),
            DbError::Sqlite(err) => unavailable(format!("sqlite: {err}")),
            DbError::Other(why) => unavailable(format!("sqlite: {why}")),
        }
    }
}

/// Whether `err` is SQLite's "busy" or "locked".
pub(crate) fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// The quoted name of table `<namespace>_<table>`.
pub(crate) fn table(namespace: &str, table: &str) -> String {
    format!("\"{namespace}_{table}\"")
}

/// The SQL of every statement, with the namespace's table names in.
#[derive(Debug)]
pub(crate) struct Sql {
    pub(crate) state_get: String,
    pub(crate) state_put: String,
    #[cfg_attr(not(feature = "test-clock"), allow(dead_code))]
    pub(crate) offset: String,
    pub(crate) lease_get: String,
    pub(crate) lease_put: String,
    pub(crate) lease_del: String,
    pub(crate) lease_free: String,
    pub(crate) lease_claim: String,
    pub(crate) lease_renew: String,
    pub(crate) head: String,
    pub(crate) any_waiter: String,
    pub(crate) waiter_get: String,
    pub(crate) waiter_add: String,
    pub(crate) waiter_del: String,
    pub(crate) waiter_del_dead: String,
    pub(crate) waiter_alive: String,
    pub(crate) waiter_grant: String,
    pub(crate) waiter_requeue: String,
    pub(crate) waiter_unclaim: String,
    pub(crate) min_arrival: String,
    pub(crate) waiter_hb: String,
    pub(crate) cancelled_get: String,
    pub(crate) cancelled_add: String,
    pub(crate) cancelled_prune: String,
    pub(crate) bell_add: String,
    pub(crate) bell_prune: String,
    pub(crate) bells_since: String,
    pub(crate) bells_max: String,
    pub(crate) snap_leases: String,
    pub(crate) snap_waiters: String,
    #[cfg_attr(not(feature = "test-clock"), allow(dead_code))]
    pub(crate) advance: String,
}

impl Sql {
    pub(crate) fn new(ns: &str) -> Self {
        let state = table(ns, "state");
        let leases = table(ns, "leases");
        let waiters = table(ns, "waiters");
        let cancelled = table(ns, "cancelled");
        let bells = table(ns, "bells");
        let clock = table(ns, "test_clock");
        Sql {
            state_get: format!("SELECT floor, token, arrival FROM {state} WHERE id = 1"),
            state_put: format!(
                "UPDATE {state} SET floor = ?1, token = ?2, arrival = ?3 WHERE id = 1"
            ),
            offset: format!("SELECT offset_us FROM {clock} LIMIT 1"),
            lease_get: format!(
                "SELECT owner, token, deadline, ttl, req, claimed FROM {leases} WHERE name = ?1"
            ),
            lease_put: format!(
                "REPLACE INTO {leases} (name, owner, token, deadline, ttl, req, claimed) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
            ),
            lease_del: format!("DELETE FROM {leases} WHERE name = ?1"),
            lease_free: format!("UPDATE {leases} SET owner = NULL WHERE name = ?1"),
            lease_claim: format!("UPDATE {leases} SET claimed = 1 WHERE name = ?1"),
            lease_renew: format!("UPDATE {leases} SET deadline = ?2, ttl = ?3 WHERE name = ?1"),
            head: format!(
                "SELECT id, owner, ttl, wd, hb FROM {waiters} \
                 WHERE name = ?1 AND granted IS NULL ORDER BY arrival LIMIT 1"
            ),
            any_waiter: format!("SELECT 1 FROM {waiters} WHERE name = ?1 LIMIT 1"),
            waiter_get: format!("SELECT granted FROM {waiters} WHERE id = ?1"),
            waiter_add: format!(
                "INSERT INTO {waiters} (id, name, arrival, owner, ttl, wd, hb) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
            ),
            waiter_del: format!("DELETE FROM {waiters} WHERE id = ?1"),
            waiter_del_dead: format!("DELETE FROM {waiters} WHERE id = ?1 AND hb <= ?2"),
            waiter_alive: format!("SELECT 1 FROM {waiters} WHERE id = ?1 AND hb > ?2"),
            waiter_grant: format!("UPDATE {waiters} SET granted = ?2, gdl = ?3 WHERE id = ?1"),
            waiter_requeue: format!(
                "UPDATE {waiters} SET granted = NULL, gdl = NULL, arrival = ?2 WHERE id = ?1"
            ),
            waiter_unclaim: format!(
                "UPDATE {waiters} SET granted = NULL, gdl = NULL WHERE id = ?1"
            ),
            min_arrival: format!(
                "SELECT min(arrival) FROM {waiters} WHERE name = ?1 AND granted IS NULL"
            ),
            waiter_hb: format!("UPDATE {waiters} SET hb = ?2 WHERE id = ?1"),
            cancelled_get: format!("SELECT 1 FROM {cancelled} WHERE id = ?1"),
            cancelled_add: format!("INSERT OR IGNORE INTO {cancelled} (id, at) VALUES (?1, ?2)"),
            cancelled_prune: format!("DELETE FROM {cancelled} WHERE at < ?1"),
            bell_add: format!("INSERT INTO {bells} (id) VALUES (?1)"),
            bell_prune: format!("DELETE FROM {bells} WHERE seq <= ?1"),
            bells_since: format!("SELECT seq, id FROM {bells} WHERE seq > ?1 ORDER BY seq"),
            bells_max: format!("SELECT coalesce(max(seq), 0) FROM {bells}"),
            snap_leases: format!(
                "SELECT l.name, l.owner, l.token, l.deadline FROM {leases} l \
                 WHERE l.owner IS NOT NULL AND ?1 < l.deadline \
                   AND (l.claimed OR EXISTS (SELECT 1 FROM {waiters} h \
                                             WHERE h.id = l.req AND h.hb > ?2)) \
                 ORDER BY l.name"
            ),
            snap_waiters: format!(
                "SELECT name, owner FROM {waiters} \
                 WHERE granted IS NULL AND hb > ?2 AND (wd = 0 OR ?1 < wd) \
                 ORDER BY name, arrival"
            ),
            advance: format!("UPDATE {clock} SET offset_us = offset_us + ?1"),
        }
    }
}

/// The schema of version 1, with `@` for the namespace prefix. Every table is the
/// namespace's own; nothing else in the file is read or written.
///
/// Times are µs since the Unix epoch: lease time (`deadline`, `wd`, `floor`) is the wall
/// clock raised to `floor` (plus the test offset in test builds); heartbeats (`hb`, `at`) are
/// the raw wall clock.
const SCHEMA: &str = r#"
CREATE TABLE "@_meta" (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
-- One row: the clock floor (lease time never goes below it), the last token, the last arrival.
CREATE TABLE "@_state" (id INTEGER PRIMARY KEY CHECK (id = 1), floor INTEGER NOT NULL,
                        token INTEGER NOT NULL, arrival INTEGER NOT NULL);
INSERT INTO "@_state" VALUES (1, 0, 0, 0);
-- One row per name that is held or has waiters. owner NULL: free (kept while waiters queue).
-- req: the request the lease went to (a try_lock's id or a waiter's id). claimed 0: handed to
-- waiter req, which has not picked it up yet.
CREATE TABLE "@_leases" (name TEXT PRIMARY KEY, owner TEXT, token INTEGER NOT NULL,
                         deadline INTEGER NOT NULL, ttl INTEGER NOT NULL, req TEXT,
                         claimed INTEGER NOT NULL) WITHOUT ROWID;
-- Queued acquire calls. wd: the wait deadline on lease time (0: none); hb: when the entry
-- counts as gone unless refreshed; granted, gdl: a lease handed to it, not yet picked up.
CREATE TABLE "@_waiters" (id TEXT PRIMARY KEY, name TEXT NOT NULL, arrival INTEGER NOT NULL,
                          owner TEXT NOT NULL, ttl INTEGER NOT NULL, wd INTEGER NOT NULL,
                          hb INTEGER NOT NULL, granted INTEGER, gdl INTEGER) WITHOUT ROWID;
CREATE INDEX "@_waiters_queue" ON "@_waiters" (name, arrival);
-- Withdrawn requests whose step may still run (kept ten minutes).
CREATE TABLE "@_cancelled" (id TEXT PRIMARY KEY, at INTEGER NOT NULL) WITHOUT ROWID;
-- Wake-ups: a waiter's id (handed a lease, or first in line now) or '*' (everybody re-checks).
-- Read by every process's listener when the file changes; the last 1000 are kept.
CREATE TABLE "@_bells" (seq INTEGER PRIMARY KEY, id TEXT NOT NULL);
-- The test clock's offset (read by builds with the `test-clock` feature only).
CREATE TABLE "@_test_clock" (offset_us INTEGER NOT NULL);
INSERT INTO "@_test_clock" VALUES (0);
"#;

/// The tables of a namespace, for the "not ours" check.
const TABLES: [&str; 7] = [
    "meta",
    "state",
    "leases",
    "waiters",
    "cancelled",
    "bells",
    "test_clock",
];

/// Where the file is: a plain path, or a `sqlite:` URL (`sqlite:path`, `sqlite://path`,
/// `sqlite:///abs/path`).
pub(crate) fn parse_location(url: &str) -> Result<PathBuf, LockError> {
    let path = match url.strip_prefix("sqlite:") {
        Some(rest) => rest.strip_prefix("//").unwrap_or(rest),
        None => url,
    };
    if path.is_empty() || path == ":memory:" || path.starts_with("file::memory:") {
        return Err(unavailable(format!(
            "sqlite: {url:?} is not a file path: locks shared by processes need a database \
             file (an in-memory database is private to one connection)"
        )));
    }
    Ok(PathBuf::from(path))
}

/// The file systems on which SQLite's WAL (shared memory beside the file) cannot work.
const NETWORK_FS: [&str; 12] = [
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "9p",
    "ceph",
    "glusterfs",
    "fuse.sshfs",
    "afs",
    "lustre",
    "gpfs",
];

/// The file system type of the mount holding `dir`, read from `/proc/self/mounts` (Linux;
/// `None` elsewhere or when it cannot be told).
fn fs_type(dir: &Path) -> Option<String> {
    let dir = std::fs::canonicalize(dir).ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mount_type(&mounts, &dir)
}

/// The type of the longest mount point in `mounts` (the format of `/proc/self/mounts`) that
/// holds `dir` (canonical).
fn mount_type(mounts: &str, dir: &Path) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for line in mounts.lines() {
        let mut fields = line.split(' ');
        let (_, Some(point), Some(kind)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        let point = point.replace("\\040", " ");
        if dir.starts_with(&point) && best.as_ref().is_none_or(|(len, _)| point.len() >= *len) {
            best = Some((point.len(), kind.to_owned()));
        }
    }
    best.map(|(_, kind)| kind)
}

/// Whether a file system of type `kind` cannot hold a WAL database shared by processes.
fn is_network_fs(kind: &str) -> bool {
    NETWORK_FS.contains(&kind)
}

/// One open connection to the file, with the namespace's statements.
pub(crate) struct Db {
    pub(crate) conn: Connection,
    /// The file's path and identity (device, inode) when opened: an operation on a file
    /// deleted or replaced since is refused, since other processes opening the path now
    /// reach another file.
    path: PathBuf,
    identity: Option<(u64, u64)>,
    pub(crate) sql: Sql,
    /// Set by an operation that rang a bell: the local listener is nudged after the commit.
    pub(crate) rang: bool,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").finish_non_exhaustive()
    }
}

impl Db {
    /// Opens `path` for the engine: refuses what cannot keep the promise (not a file, a
    /// network file system, a read-only file or directory, a file that is not SQLite, tables
    /// of the namespace that are not ours or of a newer version), turns WAL on, and creates
    /// the namespace's tables when missing (in one `BEGIN IMMEDIATE` transaction, so several
    /// processes opening at once make them once). `create`: false for the listener's and
    /// clean-up connections, which only check.
    pub(crate) fn open(path: &Path, config: &SqliteConfig, create: bool) -> Result<Db, LockError> {
        let ns = config.namespace();
        if !valid_namespace(ns) {
            return Err(unavailable(format!(
                "sqlite: the namespace {ns:?} is not an ASCII letter followed by up to 39 \
                 ASCII letters, digits or underscores"
            )));
        }
        let shown = path.display();
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if let Some(kind) = fs_type(&dir) {
            if is_network_fs(&kind) {
                return Err(unavailable(format!(
                    "sqlite: {shown} is on a network file system ({kind}), where SQLite's WAL \
                     (shared memory beside the file) and its locks cannot work across hosts"
                )));
            }
        }
        let io = config.io_timeout();
        wait_until(Some(Instant::now() + io));
        let opened = Self::open_inner(path, config, create);
        wait_until(None);
        opened.map_err(|err| match err {
            Opening::Refused(reason) => unavailable(format!("sqlite: {shown}: {reason}")),
            Opening::Db(DbError::Busy(_)) => unavailable(format!(
                "sqlite: {shown}: the file stayed locked by another connection for the \
                 io_timeout ({io:?}) while opening"
            )),
            Opening::Db(DbError::Other(why)) => unavailable(format!("sqlite: {shown}: {why}")),
            Opening::Db(DbError::Sqlite(err)) => {
                let reason = match err.sqlite_error_code() {
                    Some(ErrorCode::NotADatabase) => "not a SQLite database".to_owned(),
                    Some(ErrorCode::ReadOnly) => {
                        format!("read-only (the file or its directory): {err}")
                    }
                    Some(ErrorCode::CannotOpen) => format!(
                        "cannot be opened or created (a missing or read-only directory?): {err}"
                    ),
                    _ => err.to_string(),
                };
                unavailable(format!("sqlite: {shown}: {reason}"))
            }
        })
    }

    fn open_inner(path: &Path, config: &SqliteConfig, create: bool) -> Result<Db, Opening> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(DbError::from)?;
        conn.busy_handler(Some(busy)).map_err(DbError::from)?;
        if conn.is_readonly("main").map_err(DbError::from)? {
            return Err(Opening::Refused(
                "read-only (the file or its directory): locks need to write".into(),
            ));
        }
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(DbError::from)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Opening::Refused(format!(
                "WAL cannot be turned on (journal_mode stays {mode:?})"
            )));
        }
        let sync = match config.synchronous() {
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
        };
        conn.execute_batch(&format!("PRAGMA synchronous = {sync}"))
            .map_err(DbError::from)?;
        let ns = config.namespace();
        let db = Db {
            conn,
            path: path.to_path_buf(),
            identity: identity(path),
            sql: Sql::new(ns),
            rang: false,
        };
        db.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(DbError::from)?;
        let checked = db.check_or_create(ns, create);
        let end = if checked.is_ok() {
            "COMMIT"
        } else {
            "ROLLBACK"
        };
        let ended = db.conn.execute_batch(end).map_err(DbError::from);
        checked?;
        ended?;
        Ok(db)
    }

    /// Inside the opening transaction: the namespace's tables are ours and of our version,
    /// or absent (then made, when `create`).
    fn check_or_create(&self, ns: &str, create: bool) -> Result<(), Opening> {
        let present: Vec<String> = {
            let mut st = self
                .conn
                .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
                .map_err(DbError::from)?;
            let names = st
                .query_map([], |row| row.get::<_, String>(0))
                .map_err(DbError::from)?;
            names.collect::<Result<_, _>>().map_err(DbError::from)?
        };
        let ours: Vec<&str> = TABLES
            .iter()
            .copied()
            .filter(|t| present.iter().any(|p| *p == format!("{ns}_{t}")))
            .collect();
        if ours.is_empty() {
            if !create {
                return Err(Opening::Refused(format!(
                    "the namespace {ns:?} has no tables (open it with alkstore_sqlite::open first)"
                )));
            }
            let schema = SCHEMA.replace('@', ns);
            self.conn.execute_batch(&schema).map_err(DbError::from)?;
            self.conn
                .execute(
                    &format!(
                        "INSERT INTO {} VALUES ('engine', ?1), ('version', ?2)",
                        table(ns, "meta")
                    ),
                    params![ENGINE_MARK, SCHEMA_VERSION.to_string()],
                )
                .map_err(DbError::from)?;
            return Ok(());
        }
        let not_ours = || {
            Opening::Refused(format!(
                "tables named {ns}_* are in the file but were not made by alkstore-sqlite \
                 (refused, never touched: pick another namespace)"
            ))
        };
        if !ours.contains(&"meta") {
            return Err(not_ours());
        }
        let read = |key: &str| -> Result<Option<String>, Opening> {
            let sql = format!("SELECT value FROM {} WHERE key = ?1", table(ns, "meta"));
            match self
                .conn
                .query_row(&sql, [key], |row| row.get::<_, String>(0))
            {
                Ok(value) => Ok(Some(value)),
                Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
                Err(_) => Err(not_ours()),
            }
        };
        if read("engine")?.as_deref() != Some(ENGINE_MARK) {
            return Err(not_ours());
        }
        let version = read("version")?.and_then(|v| v.parse::<i64>().ok());
        match version {
            Some(SCHEMA_VERSION) if ours.len() == TABLES.len() => Ok(()),
            Some(v) if v > SCHEMA_VERSION => Err(Opening::Refused(format!(
                "the namespace {ns:?} was made by a newer alkstore-sqlite (schema version {v}; \
                 this build knows {SCHEMA_VERSION})"
            ))),
            _ => Err(Opening::Refused(format!(
                "the namespace {ns:?} is incomplete or of an unknown schema version {version:?}"
            ))),
        }
    }

    /// Runs `op` in one `BEGIN IMMEDIATE` transaction, waiting for the write lock until
    /// `until` at most, with the lease clock read inside it; commits when `op` succeeds
    /// (and moves the floor and the token counter), rolls back otherwise.
    pub(crate) fn write<T>(
        &mut self,
        until: Instant,
        op: impl FnOnce(&mut Tx<'_>) -> rusqlite::Result<T>,
    ) -> Result<T, DbError> {
        let started = Instant::now();
        if identity(&self.path) != self.identity {
            return Err(DbError::Other(
                "the database file was deleted or replaced since it was opened (processes that \
                 open its path now reach another file): open the store again",
            ));
        }
        wait_until(Some(until));
        let begun = self.conn.execute_batch("BEGIN IMMEDIATE");
        wait_until(None);
        if let Err(err) = begun {
            return Err(if is_busy(&err) {
                DbError::Busy(started.elapsed())
            } else {
                DbError::Sqlite(err)
            });
        }
        let result = (|| -> rusqlite::Result<(T, bool)> {
            let mut tx = Tx::begin(&self.conn, &self.sql)?;
            let value = op(&mut tx)?;
            tx.finish()?;
            Ok((value, tx.rang))
        })();
        match result {
            Ok((value, rang)) => match self.conn.execute_batch("COMMIT") {
                Ok(()) => {
                    self.rang |= rang;
                    Ok(value)
                }
                Err(err) => {
                    let _ = self.conn.execute_batch("ROLLBACK");
                    Err(err.into())
                }
            },
            Err(err) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(err.into())
            }
        }
    }
}

/// The (device, inode) of the file at `path`, `None` when it is missing.
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Why opening failed.
enum Opening {
    Refused(String),
    Db(DbError),
}

impl From<DbError> for Opening {
    fn from(err: DbError) -> Self {
        Opening::Db(err)
    }
}

/// One operation's transaction: the statements, the lease clock, the state row.
pub(crate) struct Tx<'a> {
    pub(crate) conn: &'a Connection,
    pub(crate) sql: &'a Sql,
    /// Lease time (µs): the wall clock (plus the test offset) raised to the floor.
    pub(crate) now: i64,
    /// The raw wall clock (µs): heartbeats.
    pub(crate) raw: i64,
    floor: i64,
    /// The last token handed out in the namespace.
    token: i64,
    /// The last arrival number.
    arrival: i64,
    rang: bool,
}

impl<'a> Tx<'a> {
    /// Reads the state row and the clock.
    pub(crate) fn begin(conn: &'a Connection, sql: &'a Sql) -> rusqlite::Result<Self> {
        let (floor, token, arrival) = conn
            .prepare_cached(&sql.state_get)?
            .query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        let raw = wall_us();
        let clock = raw.saturating_add(test_offset(conn, sql)?);
        Ok(Tx {
            conn,
            sql,
            now: clock.max(floor),
            raw,
            floor,
            token,
            arrival,
            rang: false,
        })
    }

    /// Writes the state row back: the floor follows lease time.
    fn finish(&self) -> rusqlite::Result<()> {
        self.conn
            .prepare_cached(&self.sql.state_put)?
            .execute(params![self.now.max(self.floor), self.token, self.arrival])?;
        Ok(())
    }

    /// The next fencing token: `max(last + 1, now)`, so tokens keep growing with the clock
    /// even if the counter's last commits were lost (see [`Synchronous`]).
    pub(crate) fn next_token(&mut self) -> i64 {
        self.token = (self.token + 1).max(self.now);
        self.token
    }

    /// The next arrival number (FIFO order of waiters).
    pub(crate) fn next_arrival(&mut self) -> i64 {
        self.arrival += 1;
        self.arrival
    }

    /// Rings the bell for `id` (a waiter's id, or `*`): every process's listener delivers it.
    pub(crate) fn ring(&mut self, id: &str) -> rusqlite::Result<()> {
        self.conn
            .prepare_cached(&self.sql.bell_add)?
            .execute([id])?;
        let seq = self.conn.last_insert_rowid();
        if seq % 100 == 0 {
            self.conn
                .prepare_cached(&self.sql.bell_prune)?
                .execute([seq - 1000])?;
        }
        self.rang = true;
        Ok(())
    }
}

/// The test clock's offset (µs), in builds with the `test-clock` feature; 0 in others.
#[cfg(feature = "test-clock")]
pub(crate) fn test_offset(conn: &Connection, sql: &Sql) -> rusqlite::Result<i64> {
    conn.prepare_cached(&sql.offset)?
        .query_row([], |r| r.get(0))
}

/// The test clock's offset (µs), in builds with the `test-clock` feature; 0 in others.
#[cfg(not(feature = "test-clock"))]
pub(crate) fn test_offset(_: &Connection, _: &Sql) -> rusqlite::Result<i64> {
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "\
/dev/sda1 / ext4 rw,relatime 0 0
server:/export /mnt/shared nfs4 rw,vers=4.2 0 0
//nas/share /mnt/nas cifs rw 0 0
tmpfs /mnt/shared/local tmpfs rw 0 0
/dev/sdb1 /mnt/with\\040space ext4 rw 0 0
";

    #[test]
    fn the_longest_mount_point_holding_the_directory_gives_its_type() {
        let kind = |dir: &str| mount_type(MOUNTS, Path::new(dir));
        assert_eq!(kind("/home/me").as_deref(), Some("ext4"));
        assert_eq!(kind("/mnt/shared/app").as_deref(), Some("nfs4"));
        assert_eq!(kind("/mnt/shared/local/x").as_deref(), Some("tmpfs"));
        assert_eq!(kind("/mnt/nas").as_deref(), Some("cifs"));
        assert_eq!(kind("/mnt/with space/db").as_deref(), Some("ext4"));
        assert!(is_network_fs("nfs4") && is_network_fs("cifs") && is_network_fs("fuse.sshfs"));
        assert!(!is_network_fs("ext4") && !is_network_fs("tmpfs") && !is_network_fs("overlay"));
    }

    #[test]
    fn locations_accept_paths_and_sqlite_urls_and_refuse_memory() {
        assert_eq!(parse_location("a/b.db").unwrap(), PathBuf::from("a/b.db"));
        assert_eq!(
            parse_location("sqlite:a/b.db").unwrap(),
            PathBuf::from("a/b.db")
        );
        assert_eq!(
            parse_location("sqlite:///abs/b.db").unwrap(),
            PathBuf::from("/abs/b.db")
        );
        assert_eq!(
            parse_location("sqlite://rel/b.db").unwrap(),
            PathBuf::from("rel/b.db")
        );
        for memory in [
            ":memory:",
            "sqlite::memory:",
            "",
            "sqlite:",
            "file::memory:?cache=shared",
        ] {
            assert!(parse_location(memory).is_err(), "{memory}");
        }
    }

    #[test]
    fn durations_are_kept_in_whole_microseconds_within_bounds() {
        assert_eq!(duration_us(Duration::ZERO), 1);
        assert_eq!(duration_us(Duration::from_nanos(1)), 1);
        assert_eq!(duration_us(Duration::from_millis(1500)), 1_500_000);
        assert_eq!(duration_us(Duration::MAX), MAX_TTL_US);
    }
}
