//! The PostgreSQL engine: [`PgLocks`] in the schema asked for, and the server's clock
//! (`clock_timestamp()`), which its deadlines are on.

use std::fmt;
use std::time::Duration;

use alkstore_mem::{LockError, Timestamp};
use alkstore_pg::{PgConfig, PgLocks};

use crate::command::{EngineClock, Failure};

/// Connects to the database at `url`, in schema `namespace` (else the engine's default,
/// `"alkstore"`), which must exist: an operator's view never installs the engine's schema,
/// so that a mistyped namespace is an error rather than an empty, newly made schema.
///
/// # Errors
/// [`Failure::Usage`] for a schema name the engine refuses, or one the database does not
/// have; [`Failure::Unavailable`] when the server cannot be reached (the engine's message,
/// which never quotes the URL's password).
pub(super) async fn open(
    url: &str,
    namespace: Option<&str>,
) -> Result<(PgLocks, PgClock), Failure> {
    let limits = crate::served::limits();
    let mut config = PgConfig::new()
        .with_max_name_len(limits.max_name_len())
        .with_max_owner_len(limits.max_owner_len());
    if let Some(schema) = namespace {
        config = config.with_schema(schema);
    }
    config.check_schema().map_err(Failure::Usage)?;
    let clock = PgClock {
        url: url.to_owned(),
        io_timeout: config.io_timeout(),
    };
    if !clock.schema_exists(config.schema()).await? {
        return Err(Failure::Usage(format!(
            "schema {:?} does not exist in this database: no alkstore-pg store has used it \
             (check --namespace; the default is \"alkstore\")",
            config.schema()
        )));
    }
    let store = PgLocks::connect_with(url, config).await?;
    Ok((store, clock))
}

/// The PostgreSQL server's clock, read with `clock_timestamp()`: the clock the engine's
/// deadlines are on (nanoseconds since the Unix epoch, by the server).
pub(super) struct PgClock {
    url: String,
    io_timeout: Duration,
}

impl PgClock {
    /// Runs `sql` (one row, one column of type `T`) on a connection of its own, within the
    /// `io_timeout`; `what` names it in errors.
    async fn query_one<T>(
        &self,
        what: &str,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<T, LockError>
    where
        T: for<'a> tokio_postgres::types::FromSql<'a>,
    {
        let read = async {
            let (client, connection) =
                tokio_postgres::connect(&self.url, tokio_postgres::NoTls).await?;
            let driver = tokio::spawn(connection);
            let row = client.query_one(sql, params).await;
            drop(client);
            driver.abort();
            row?.try_get::<_, T>(0)
        };
        match tokio::time::timeout(self.io_timeout, read).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(LockError::Unavailable {
                reason: format!("postgres {what}: {e}"),
            }),
            Err(_) => Err(LockError::Unavailable {
                reason: format!(
                    "postgres {what} did not answer within {:?}",
                    self.io_timeout
                ),
            }),
        }
    }

    /// Whether the database has schema `schema`.
    async fn schema_exists(&self, schema: &str) -> Result<bool, LockError> {
        self.query_one(
            "schema lookup",
            "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)",
            &[&schema],
        )
        .await
    }
}

impl EngineClock for PgClock {
    async fn now(&self) -> Result<Timestamp, LockError> {
        let micros: i64 = self
            .query_one(
                "clock_timestamp()",
                "SELECT (extract(epoch from clock_timestamp()) * 1000000)::bigint",
                &[],
            )
            .await?;
        Ok(Timestamp::from_nanos(
            u64::try_from(micros).unwrap_or(0).saturating_mul(1_000),
        ))
    }
}

impl fmt::Debug for PgClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not the url: it may hold the password.
        f.debug_struct("PgClock")
            .field("io_timeout", &self.io_timeout)
            .finish_non_exhaustive()
    }
}
