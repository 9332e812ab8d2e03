//! The Redis engine: [`RedisLocks`] in the namespace asked for, and the server's clock
//! (`TIME`), which its deadlines are on.

use std::fmt;
use std::time::Duration;

use alkstore_mem::{LockError, Timestamp};
use alkstore_redis::{RedisConfig, RedisLocks};

use crate::command::{EngineClock, Failure};

/// Connects to the Redis at `url`, in `namespace` (else the engine's default, `"alk"`).
///
/// # Errors
/// [`Failure::Usage`] for a namespace Redis keys cannot carry (`{` or `}`);
/// [`Failure::Unavailable`] when the server cannot be reached (the engine's message, which
/// never quotes the URL's password).
pub(super) async fn open(
    url: &str,
    namespace: Option<&str>,
) -> Result<(RedisLocks, RedisClock), Failure> {
    let limits = crate::served::limits();
    let mut config = RedisConfig::new()
        .with_max_name_len(limits.max_name_len())
        .with_max_owner_len(limits.max_owner_len());
    if let Some(namespace) = namespace {
        if namespace.contains(['{', '}']) {
            return Err(Failure::Usage(format!(
                "namespace {namespace:?} holds '{{' or '}}', which a Redis namespace cannot"
            )));
        }
        config = config.with_namespace(namespace);
    }
    let io_timeout = config.io_timeout();
    let store = RedisLocks::connect_with(url, config).await?;
    // The engine parsed the same URL to connect, so this does not fail in practice.
    let client = ::redis::Client::open(url).map_err(|e| unavailable(format!("redis: {e}")))?;
    Ok((store, RedisClock { client, io_timeout }))
}

/// The Redis server's clock, read with `TIME`: the clock the engine's deadlines are on
/// (nanoseconds since the Unix epoch, by the server).
pub(super) struct RedisClock {
    client: ::redis::Client,
    io_timeout: Duration,
}

impl EngineClock for RedisClock {
    async fn now(&self) -> Result<Timestamp, LockError> {
        let read = async {
            let mut conn = self.client.get_multiplexed_async_connection().await?;
            ::redis::cmd("TIME")
                .query_async::<(u64, u64)>(&mut conn)
                .await
        };
        match tokio::time::timeout(self.io_timeout, read).await {
            Ok(Ok((secs, micros))) => Ok(Timestamp::from_nanos(
                secs.saturating_mul(1_000_000_000)
                    .saturating_add(micros.saturating_mul(1_000)),
            )),
            Ok(Err(e)) => Err(unavailable(format!("redis TIME: {e}"))),
            Err(_) => Err(unavailable(format!(
                "redis TIME did not answer within {:?}",
                self.io_timeout
            ))),
        }
    }
}

impl fmt::Debug for RedisClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not the client: its connection info holds the password.
        f.debug_struct("RedisClock")
            .field("io_timeout", &self.io_timeout)
            .finish_non_exhaustive()
    }
}

/// `LockError::Unavailable` with this reason.
fn unavailable(reason: String) -> LockError {
    LockError::Unavailable { reason }
}
