//! The schema as an administrator installs it ([`install`]), and the check every connect
//! makes first ([`open`]): the url, the schema name, the server (a primary, UTF8) and the
//! schema's version.

use std::str::FromStr;

use alkstore_mem::LockError;

use crate::config::PgConfig;
use crate::pool::Pool;
use crate::sql::Schema;
use crate::wire::{down, redacted};

/// Installs schema [`PgConfig::schema`] on the database at `url`, or upgrades it to this
/// build's version, and returns: what [`PgLocks::connect_with`](crate::PgLocks::connect_with)
/// does first, without opening a pool. Run it as the role that is to own the schema (it
/// needs `CREATE` on the database, or an empty schema of its own that an administrator made
/// with `CREATE SCHEMA .. AUTHORIZATION`); the application's roles then need only the rights
/// the README lists under "Roles and grants", and their `connect` only checks the version.
/// Idempotent, and safe while stores are connected (one transaction under an advisory lock).
/// The whole is bounded by the config's `io_timeout` (give it a generous one).
///
/// # Errors
/// `Unavailable` as [`connect_with`](crate::PgLocks::connect_with) answers it: the server
/// cannot be reached, is a hot standby, the database is not UTF8, the schema is at a newer
/// version, or this role lacks a right (the error names it).
///
/// # Example
/// ```no_run
/// use alkstore_pg::{PgConfig, PgLocks};
/// use std::time::Duration;
///
/// # async fn run() -> Result<(), alkstore_mem::LockError> {
/// // Once, as the schema's owner (a deploy step):
/// let config = PgConfig::new().with_schema("billing_locks");
/// let admin = config.clone().with_io_timeout(Duration::from_secs(30));
/// alkstore_pg::install("postgres://locks_owner@db/app", admin).await?;
/// // Every process, as the application's role (no DDL rights):
/// let locks = PgLocks::connect_with("postgres://app@db/app", config).await?;
/// # Ok(())
/// # }
/// ```
pub async fn install(url: &str, config: PgConfig) -> Result<(), LockError> {
    let (pool, schema) = pool_for(url, &config, 1)?;
    let io = config.io_timeout();
    let migrate = async {
        let mut client = pool.connect().await?;
        migrate(&mut client, &schema).await
    };
    tokio::time::timeout(io, migrate)
        .await
        .map_err(|_| timed_out(&pool, &schema, config.io_timeout()))?
}

/// The pool of `config` on `url` (not connected yet) and its schema's identifiers.
pub(crate) fn pool_for(
    url: &str,
    config: &PgConfig,
    size: usize,
) -> Result<(Pool, Schema), LockError> {
    config.check_schema().map_err(down)?;
    let pg_config = tokio_postgres::Config::from_str(url).map_err(|e| {
        down(format!(
            "invalid url (not quoted, it may hold a password): {e}"
        ))
    })?;
    let schema = Schema::new(config.schema());
    let pool = Pool::new(
        pg_config,
        size,
        config.io_timeout(),
        config.lock_wait(),
        &schema,
    );
    Ok((pool, schema))
}

/// Runs the migration on `client` (installs, upgrades or checks the schema).
pub(crate) async fn migrate(
    client: &mut tokio_postgres::Client,
    schema: &Schema,
) -> Result<(), LockError> {
    crate::sql::migrate(client, schema)
        .await
        .map_err(|why| down(format!("schema {:?}: {why}", schema.name)))
}

/// The error of a connect or install that ran out of its `io_timeout`.
pub(crate) fn timed_out(pool: &Pool, schema: &Schema, io: std::time::Duration) -> LockError {
    down(format!(
        "could not connect to {} and check schema {:?} within {io:?}",
        redacted(pool.config()),
        schema.name
    ))
}
