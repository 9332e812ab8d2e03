//! The database file: opening it (checks, WAL, the versioned schema), the bounded wait for
//! SQLite's write lock, and one `BEGIN IMMEDIATE` transaction per operation with the lease
//! clock read inside it.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use alkstore_kit::unavailable;
use alkstore_mem::LockError;
use rusqlite::{Connection, ErrorCode, OpenFlags, params};

use crate::busy::{DbError, busy, is_busy, wait_until};
use crate::config::{SqliteConfig, Synchronous, valid_namespace};
use crate::location::{fs_type, is_network_fs};
use crate::schema::{SCHEMA, Sql, TABLES, table};
use crate::sides::{Files, Paths, shm_deleted_under_another_process};
use crate::stmts::{Q, Statements};
pub(crate) use crate::tx::{Tx, test_offset};

/// The version of the tables this build writes and reads.
pub(crate) const SCHEMA_VERSION: i64 = 2;
/// What `<namespace>_meta` says under `engine` in a file of ours.
const ENGINE_MARK: &str = "alkstore-sqlite";

/// One open connection to the file, with the namespace's statements.
pub(crate) struct Db {
    pub(crate) conn: Connection,
    /// The file's path, and the identities (device, inode) of the file, its `-wal` and its
    /// `-shm` when opened: an operation after any of them was deleted or replaced is
    /// refused (see [`sides`](crate::sides)).
    paths: Paths,
    files: Files,
    pub(crate) sql: Sql,
    /// Set by an operation that rang a bell: the local listener is nudged after the commit.
    pub(crate) rang: Cell<bool>,
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
    /// clean-up connections, which only check. `path` is the file's own path, as
    /// `Sqlite::open` resolved it (`location::resolve`: symlinks followed, hard links refused).
    pub(crate) fn open(path: &Path, config: &SqliteConfig, create: bool) -> Result<Db, LockError> {
        let ns = config.namespace();
        if !valid_namespace(ns) {
            return Err(unavailable(format!(
                "sqlite: the namespace {ns:?} is not an ASCII letter followed by up to 39 \
                 ASCII letters, digits or underscores"
            )));
        }
        let shown = path.display();
        // The same refusals as a `sqlite:` URL's: "" and ":memory:" (SQLite would open a
        // private temporary or in-memory database).
        if matches!(path.to_str(), Some("" | ":memory:")) {
            crate::location::parse_location(&path.to_string_lossy())?;
        }
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
        let until = Instant::now() + io;
        // A process opening the file in this instant holds SQLite's lock before it makes the
        // -shm, and one closing it removes the -shm before it lets go: asked again until the
        // io_timeout.
        while shm_deleted_under_another_process(path) {
            if Instant::now() >= until {
                return Err(unavailable(format!(
                    "sqlite: {shown}: its -shm (the WAL index and write lock) is missing while \
                     another process has the file open: it was deleted under that process, and \
                     opening now would make a second, separate one (two holders of one name, a \
                     corrupted file); stop the processes using the file, then open it again"
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        wait_until(Some(until));
        let opened = Self::open_inner(path, config, create);
        wait_until(None);
        opened.map_err(|err| match err {
            Opening::Refused(reason) => unavailable(format!("sqlite: {shown}: {reason}")),
            Opening::Db(DbError::Busy(_)) if is_empty_file(path) => unavailable(format!(
                "sqlite: {shown}: the file is empty (0 bytes) but its -wal or -shm holds earlier \
                 data: it was truncated while in use (restore it from a backup, or delete it \
                 and its -wal and -shm once no process uses it)"
            )),
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
            paths: Paths::new(path),
            files: Files::of(&Paths::new(path)),
            sql: Sql::new(ns),
            rang: Cell::new(false),
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
        // After a transaction both side files exist; one missing was deleted under another
        // connection of this process, whose deleted files SQLite shares with this one.
        let db = Db {
            files: Files::of(&db.paths),
            ..db
        };
        if db.files.missing_side() {
            return Err(Opening::Refused(
                "its -wal or -shm is missing right after opening: deleted while another \
                 connection of this process had the file open (close every store on the file, \
                 then open it again)"
                    .into(),
            ));
        }
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
            // SQLite's table names ignore ASCII case: `JOBS_meta` is `jobs_meta`. Another
            // namespace's tables in other case are refused with the reason (not SQLite's
            // "already exists"), never shared silently.
            let meta = format!("{ns}_meta");
            if let Some(other) = present.iter().find(|p| p.eq_ignore_ascii_case(&meta)) {
                let other = &other[..other.len() - "_meta".len()];
                return Err(Opening::Refused(format!(
                    "the file holds the namespace {other:?}, which SQLite's case-insensitive \
                     table names make the same tables as {ns:?}: open it as {other:?}, or pick \
                     another namespace"
                )));
            }
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
            Some(v @ 1..SCHEMA_VERSION) => Err(Opening::Refused(format!(
                "the namespace {ns:?} was made by an older, unreleased alkstore-sqlite (schema \
                 version {v}; this build knows {SCHEMA_VERSION}): drop its tables or pick \
                 another namespace"
            ))),
            _ => Err(Opening::Refused(format!(
                "the namespace {ns:?} is incomplete or of an unknown schema version {version:?}"
            ))),
        }
    }

    /// Runs `op` in one `BEGIN IMMEDIATE` transaction on this connection's statements `st`,
    /// waiting for the write lock until `until` at most, with the lease clock read inside
    /// it; commits when `op` succeeds (and moves the floor and the token counter), rolls
    /// back otherwise.
    ///
    /// `name` is the lock the operation is about (`""` for none): its lease row, and whether
    /// anyone waits for it, are read with the state row in one statement, and so is whether
    /// request `rid` (`""` for none) was withdrawn ([`Tx::cancelled`]).
    pub(crate) fn write<'a, T>(
        &self,
        st: &'a Statements<'_>,
        until: Instant,
        name: &'a str,
        rid: &str,
        op: impl FnOnce(&mut Tx<'a, '_>) -> rusqlite::Result<T>,
    ) -> Result<T, DbError> {
        let started = Instant::now();
        if let Some(why) = self.files.changed(&Files::of(&self.paths)) {
            return Err(DbError::Other(why));
        }
        wait_until(Some(until));
        let begun = st.run(Q::BeginTx);
        wait_until(None);
        if let Err(err) = begun {
            return Err(if is_busy(&err) {
                DbError::Busy(started.elapsed())
            } else {
                DbError::Sqlite(err)
            });
        }
        let result = (|| -> rusqlite::Result<(T, bool)> {
            let mut tx = Tx::begin(st, name, rid)?;
            let value = op(&mut tx)?;
            tx.finish()?;
            Ok((value, tx.rang))
        })();
        match result {
            Ok((value, rang)) => match st.run(Q::Commit) {
                Ok(()) => {
                    self.rang.set(self.rang.get() | rang);
                    Ok(value)
                }
                Err(err) => {
                    Self::rollback(st);
                    Err(err.into())
                }
            },
            Err(err) => {
                Self::rollback(st);
                Err(err.into())
            }
        }
    }

    /// Ends a failed transaction on `st`'s connection (when one is open: SQLite may have
    /// rolled it back itself).
    pub(crate) fn rollback(st: &Statements<'_>) {
        if !st.conn.is_autocommit() {
            let _ = st.run(Q::Rollback);
        }
    }
}

/// Whether the file at `path` exists and is empty (0 bytes).
fn is_empty_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0)
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
