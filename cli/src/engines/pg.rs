//! The PostgreSQL engine: [`PgLocks`] in the schema asked for, and the server's clock
//! (`clock_timestamp()`), which its deadlines are on.

use std::fmt;
use std::time::Duration;

use alkstore_mem::{LockError, Timestamp};
use alkstore_pg::{PgConfig, PgLocks};

use crate::command::{EngineClock, Failure};

/// Connects to the database at `url`, in schema `namespace` (else the engine's default,
/// `"alkstore"`; connecting installs the engine's schema there if it is missing).
///
/// # Errors
/// [`Failure::Unavailable`] when the server cannot be reached, or the schema name is refused
/// (the engine's message, which never quotes the URL's password).
pub(super) async fn open(
    url: &str,
    namespace: Option<&str>,
) -> Result<(PgLocks, PgClock), Failure> {
    let limits = super::limits();
    let mut config = PgConfig::new()
        .with_max_name_len(limits.max_name_len())
        .with_max_owner_len(limits.max_owner_len());
    if let Some(schema) = namespace {
        config = config.with_schema(schema);
    }
    let io_timeout = config.io_timeout();
    let store = PgLocks::connect_with(url, config).await?;
    Ok((
        store,
        PgClock {
            url: url.to_owned(),
            io_timeout,
        },
    ))
}

/// The PostgreSQL server's clock, read with `clock_timestamp()`: the clock the engine's
/// deadlines are on (nanoseconds since the Unix epoch, by the server).
pub(super) struct PgClock {
    url: String,
    io_timeout: Duration,
}

impl EngineClock for PgClock {
    async fn now(&self) -> Result<Timestamp, LockError> {
        let read = async {
            let (client, connection) =
                tokio_postgres::connect(&self.url, tokio_postgres::NoTls).await?;
            let driver = tokio::spawn(connection);
            let row = client
                .query_one(
                    "SELECT (extract(epoch from clock_timestamp()) * 1000000)::bigint",
                    &[],
                )
                .await;
            drop(client);
            driver.abort();
            row?.try_get::<_, i64>(0)
        };
        match tokio::time::timeout(self.io_timeout, read).await {
            Ok(Ok(micros)) => Ok(Timestamp::from_nanos(
                u64::try_from(micros).unwrap_or(0).saturating_mul(1_000),
            )),
            Ok(Err(e)) => Err(LockError::Unavailable {
                reason: format!("postgres clock_timestamp(): {e}"),
            }),
            Err(_) => Err(LockError::Unavailable {
                reason: format!(
                    "postgres clock_timestamp() did not answer within {:?}",
                    self.io_timeout
                ),
            }),
        }
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
