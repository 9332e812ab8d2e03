//! The SQLite engine: [`SqliteLocks`] on the file a `sqlite://` URL names, in the namespace
//! asked for, and the file's lease clock (the wall clock raised to the floor kept in the file),
//! which its deadlines are on.

use std::path::PathBuf;

use alkstore_mem::{LockError, Timestamp};
use alkstore_sqlite::{SqliteConfig, SqliteLocks};
use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::command::{EngineClock, Failure};

/// Opens the file `url` names (`sqlite:///abs/path` or `sqlite://relative/path`) in namespace
/// `namespace` (else the engine's default, `"alkstore"`), which must exist in it: an
/// operator's view never makes a file or the engine's tables, so that a mistyped path or
/// namespace is an error rather than an empty, newly made store.
///
/// # Errors
/// [`Failure::Usage`] for a missing file or namespace, [`Failure::Unavailable`] when the
/// engine refuses the file (not SQLite, not ours, read-only, locked for the `io_timeout`).
pub(super) async fn open(
    url: &str,
    namespace: Option<&str>,
) -> Result<(SqliteLocks, SqliteClock), Failure> {
    let path = PathBuf::from(url.split_once("://").map_or(url, |(_, rest)| rest));
    if !path.is_file() {
        return Err(Failure::Usage(format!(
            "{} is not a file: no alkstore-sqlite store has used it (check the path)",
            path.display()
        )));
    }
    let limits = crate::served::limits();
    let mut config = SqliteConfig::new()
        .with_max_name_len(limits.max_name_len())
        .with_max_owner_len(limits.max_owner_len());
    if let Some(ns) = namespace {
        config = config.with_namespace(ns);
    }
    let clock = SqliteClock {
        path: path.clone(),
        namespace: config.namespace().to_owned(),
    };
    if !clock.namespace_exists()? {
        return Err(Failure::Usage(format!(
            "namespace {:?} does not exist in {}: no alkstore-sqlite store has used it \
             (check --namespace; the default is \"alkstore\")",
            config.namespace(),
            path.display()
        )));
    }
    let store = alkstore_sqlite::open_with(&path, config).await?;
    Ok((store, clock))
}

/// The file's lease clock: the wall clock raised to the floor kept in `<namespace>_leases`
/// (the row named `''`, schema version 2).
#[derive(Debug)]
pub(super) struct SqliteClock {
    path: PathBuf,
    namespace: String,
}

impl SqliteClock {
    fn read_only(&self) -> Result<Connection, LockError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&self.path, flags).map_err(unavailable)?;
        conn.busy_timeout(std::time::Duration::from_secs(2))
            .map_err(unavailable)?;
        Ok(conn)
    }

    /// Whether the file has the namespace's tables (its `_meta` table).
    fn namespace_exists(&self) -> Result<bool, LockError> {
        let conn = self.read_only()?;
        let table = format!("{}_meta", self.namespace);
        conn.query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |_| Ok(()),
        )
        .optional()
        .map(|found| found.is_some())
        .map_err(unavailable)
    }
}

fn unavailable(e: rusqlite::Error) -> LockError {
    LockError::Unavailable {
        reason: format!("sqlite: {e}"),
    }
}

impl EngineClock for SqliteClock {
    async fn now(&self) -> Result<Timestamp, LockError> {
        let conn = self.read_only()?;
        let floor: i64 = conn
            .query_row(
                &format!(
                    "SELECT deadline FROM \"{}_leases\" WHERE name = ''",
                    self.namespace
                ),
                [],
                |r| r.get(0),
            )
            .map_err(unavailable)?;
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros());
        let micros = u64::try_from(wall)
            .unwrap_or(u64::MAX)
            .max(u64::try_from(floor).unwrap_or(0));
        Ok(Timestamp::from_nanos(micros.saturating_mul(1_000)))
    }
}
