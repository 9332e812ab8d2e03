//! [`RedisLocks`]: the connection, the config, and the calls that run one script each.

use core::fmt;
use std::sync::Arc;
#[cfg(feature = "test-clock")]
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use alkstore_mem::validate::{check_name, check_request};
use alkstore_mem::{BoxedFuture, LeaseInfo, LockError, Snapshot, Timestamp};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{FromRedisValue, Script, ToRedisArgs};

use crate::acquire::RedisAcquire;
use crate::config::RedisConfig;
use crate::lock::RedisLock;
use crate::scripts::SCRIPTS;
use crate::wake::Wake;

/// The future of a one-shot call to Redis ([`RedisLocks::try_lock`], [`RedisLock::renew`](crate::RedisLock::renew), …):
/// a named type, so that it can be stored and `select!`ed.
pub type RedisFuture<'a, T> = BoxedFuture<'a, Result<T, LockError>>;

/// Named exclusive locks with TTL leases and fencing tokens, kept in Redis.
///
/// Cheap to clone: clones share one multiplexed connection (a
/// [`ConnectionManager`], which reconnects by itself) and one pub/sub subscriber. Every
/// operation validates its input locally with the core's checks, then runs one Lua script
/// that reads the server's `TIME`, decides and writes atomically. See the
/// [crate docs](crate) for the model and the guarantees.
///
/// A store is bound to the tokio runtime it was connected on (its connection's tasks run
/// there).
#[derive(Clone)]
pub struct RedisLocks {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    conn: ConnectionManager,
    pub(crate) config: RedisConfig,
    /// `{ns}:`, the first key of every script.
    pub(crate) prefix: String,
    pub(crate) wake: Arc<Wake>,
    /// Test builds only: drop the next script reply and run the script again.
    #[cfg(feature = "test-clock")]
    lose_next_reply: std::sync::atomic::AtomicBool,
}

/// A reply's reading of the server's lease clock, with the local instant its request was
/// SENT at, so that a handle can estimate the server's time without asking.
///
/// The server read its clock after the request left (and the reply took time to come back),
/// so `server + (now - sent)` is never behind the server's real time: the estimate errs
/// early, never late. A deadline that has passed by it may still be a little ahead on the
/// server; one that has not passed by it has not passed on the server either.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Anchor {
    pub(crate) server: Timestamp,
    pub(crate) local: Instant,
}

impl Anchor {
    /// The server's reading `server_us` of a request sent at `sent`.
    pub(crate) fn new(server_us: u64, sent: Instant) -> Self {
        Anchor {
            server: from_us(server_us),
            local: sent,
        }
    }

    /// The server's time now, as estimated from this reading (never behind it).
    pub(crate) fn estimate(&self) -> Timestamp {
        self.server.saturating_add(self.local.elapsed())
    }

    /// How long until `at` on the server's clock, as estimated from this reading.
    pub(crate) fn until(&self, at: Timestamp) -> Duration {
        at.saturating_duration_since(self.estimate())
    }
}

/// The longest lease, in µs: 100 years (longer ttls, up to `Duration::MAX`, are cut to it),
/// which keeps every deadline an exact integer in Lua's doubles.
const MAX_TTL_US: u64 = 100 * 365 * 24 * 3600 * 1_000_000;

/// `d` in whole microseconds, rounded up (a 1 ns ttl is 1 µs, never 0) and capped.
pub(crate) fn micros(d: Duration) -> u64 {
    let us = d.as_nanos().div_ceil(1000);
    u64::try_from(us).unwrap_or(u64::MAX).min(MAX_TTL_US)
}

/// A server reading in µs as a [`Timestamp`] (ns since the Unix epoch, on the server's clock).
pub(crate) fn from_us(us: u64) -> Timestamp {
    Timestamp::from_nanos(us.saturating_mul(1000))
}

/// `LockError::Unavailable` with this reason.
pub(crate) fn unavailable(reason: impl Into<String>) -> LockError {
    LockError::Unavailable {
        reason: reason.into(),
    }
}

/// `url` for messages: its scheme, host, port and path (the db) only. Whatever could hold a
/// secret is left out: everything up to the last `@` (user and password, even unescaped
/// ones), and the query and fragment (`redis+unix:///path?pass=…`).
pub(crate) fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "(a url without \"scheme://\", not quoted)".into();
    };
    let rest = rest.rsplit_once('@').map_or(rest, |(_, after)| after);
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    format!("{scheme}://{rest}")
}

/// The lease in a `{owner, token, dl, ...}` reply on `name`; `None` for an empty reply.
fn lease_from(name: &str, reply: &[String]) -> Result<Option<LeaseInfo>, LockError> {
    let Some(owner) = reply.first() else {
        return Ok(None);
    };
    let (token, deadline) = (field(reply, 1)?, field(reply, 2)?);
    Ok(Some(LeaseInfo::new(name, owner, token, from_us(deadline))))
}

/// Parses field `i` of a script's reply as a number.
pub(crate) fn field(reply: &[String], i: usize) -> Result<u64, LockError> {
    reply
        .get(i)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| unavailable(format!("unexpected reply from a lock script: {reply:?}")))
}

impl RedisLocks {
    /// Connects to the Redis at `url` (`redis://host:port/db`) with the default
    /// [`RedisConfig`] (namespace `"alk"`, 2 s `io_timeout`).
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the server cannot be reached within the `io_timeout`,
    /// or the url is malformed.
    pub async fn connect(url: &str) -> Result<RedisLocks, LockError> {
        Self::connect_with(url, RedisConfig::default()).await
    }

    /// Connects to the Redis at `url` with `config`.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the server cannot be reached within the `io_timeout`,
    /// the url is malformed, or the namespace is empty or holds `{` or `}`.
    pub async fn connect_with(url: &str, config: RedisConfig) -> Result<RedisLocks, LockError> {
        let ns = config.namespace();
        if ns.is_empty() || ns.contains(['{', '}']) {
            return Err(unavailable(format!(
                "invalid RedisConfig: namespace {ns:?} must be non-empty and hold no '{{' or '}}'"
            )));
        }
        let client = redis::Client::open(url)
            .map_err(|e| unavailable(format!("invalid redis url {}: {e}", redacted(url))))?;
        let io = config.io_timeout();
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(io))
            .set_response_timeout(Some(io))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(20))
            .set_max_delay(Duration::from_millis(500));
        let conn = tokio::time::timeout(
            io,
            ConnectionManager::new_with_config(client.clone(), manager_config),
        )
        .await
        .map_err(|_| {
            unavailable(format!(
                "could not connect to {} within {io:?}",
                redacted(url)
            ))
        })?
        .map_err(|e| unavailable(format!("could not connect to {}: {e}", redacted(url))))?;
        let prefix = format!("{{{ns}}}:");
        let wake = Arc::new(Wake::new(client, format!("{prefix}wake"), io));
        Ok(RedisLocks {
            inner: Arc::new(Inner {
                conn,
                config,
                prefix,
                wake,
                #[cfg(feature = "test-clock")]
                lose_next_reply: std::sync::atomic::AtomicBool::new(false),
            }),
        })
    }

    /// The configuration this store runs with.
    pub fn config(&self) -> &RedisConfig {
        &self.inner.config
    }

    /// Runs `script` on `name` with `args`, within the `io_timeout`; every failure (refused,
    /// timed out, a script error) is [`LockError::Unavailable`].
    pub(crate) async fn run<T: FromRedisValue>(
        &self,
        script: &Script,
        name: &str,
        args: &[&dyn ToRedisArgsDyn],
    ) -> Result<T, LockError> {
        let mut invocation = script.key(&self.inner.prefix);
        invocation.arg(name);
        for arg in args {
            arg.push_to(&mut invocation);
        }
        let mut conn = self.inner.conn.clone();
        let io = self.inner.config.io_timeout();
        #[cfg(feature = "test-clock")]
        let lose_reply = self.inner.lose_next_reply.swap(false, Ordering::SeqCst);
        #[cfg(not(feature = "test-clock"))]
        let lose_reply = false;
        let call = async {
            let first = invocation.invoke_async(&mut conn).await;
            match first {
                // The test hook: the script ran, its reply is dropped, as by a connection
                // that died after the server ran it.
                Ok(_) if lose_reply => invocation.invoke_async(&mut conn).await,
                // The connection was found dead (killed, or the server restarted): the
                // manager reconnects, and the call is tried once more on the new connection.
                // The server may have run it before the connection died (the reply was
                // lost), so every script is idempotent: renew, is_held, holder and cancel
                // are by nature; try_lock and acquire pass a request id that a retry finds
                // in its own lease and returns as granted; release leaves a short-lived mark
                // under its request id, so a retry still answers true.
                Err(e) if e.is_connection_dropped() || e.is_io_error() => {
                    invocation.invoke_async(&mut conn).await
                }
                other => other,
            }
        };
        let failed = match tokio::time::timeout(io, call).await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(e)) => unavailable(format!("redis: {e}")),
            Err(_) => unavailable(format!("redis did not answer within {io:?}")),
        };
        alkstore_mem::events::unavailable(name, &failed);
        Err(failed)
    }

    /// Takes the lock `name` for `owner` until `ttl` from now (on the server's clock), if it
    /// is free.
    ///
    /// Resolves to `Ok(Some(lock))` when granted, with a fencing token larger than any this
    /// namespace granted before; `Ok(None)` when a live lease holds the name (the same
    /// owner's included) or waiters are queued for it (the first of them is handed the
    /// lease instead).
    ///
    /// # Errors
    /// [`LockError::InvalidName`], [`LockError::ReservedName`], [`LockError::InvalidOwner`],
    /// [`LockError::InvalidTtl`] before any round trip, exactly as the core's;
    /// [`LockError::Unavailable`] when Redis does not answer within the `io_timeout` or the
    /// script fails: then no lock is held by this call (a lease granted by a reply that was
    /// lost lapses at its deadline).
    pub fn try_lock(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
    ) -> RedisFuture<'_, Option<RedisLock>> {
        let checked = check_request(name, owner, ttl, &self.inner.config.limits());
        let (name, owner) = (name.to_owned(), owner.to_owned());
        BoxedFuture::new(async move {
            checked?;
            self.try_lock_checked(&name, &owner, ttl).await
        })
    }

    /// [`try_lock`](Self::try_lock) of checked inputs.
    async fn try_lock_checked(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<RedisLock>, LockError> {
        // The request's id makes a retry after a lost reply find its own lease.
        let rid = crate::acquire::new_id();
        let sent = Instant::now();
        let reply: Vec<String> = self
            .run(&SCRIPTS.try_lock, name, &[&owner, &micros(ttl), &rid])
            .await?;
        if reply.first().map(String::as_str) != Some("1") {
            return Ok(None);
        }
        let (token, deadline, now) = (field(&reply, 1)?, field(&reply, 2)?, field(&reply, 3)?);
        let lock = RedisLock::new(
            self.clone(),
            name,
            owner,
            token,
            from_us(deadline),
            ttl,
            Anchor::new(now, sent),
        );
        // After the handle exists: a subscriber that panics unwinds through its drop, which
        // releases the lease.
        alkstore_mem::events::granted(name, owner, token, from_us(deadline), false);
        Ok(Some(lock))
    }

    /// Waits for the lock `name`, then holds it for `ttl`: without limit, unless bounded with
    /// [`RedisAcquire::timeout`].
    ///
    /// Waiters on a name are served in arrival order across every process sharing the
    /// namespace: a release hands the lease to the first waiter inside the release script,
    /// and a `try_lock` arriving in between gets `None`. Waiters sleep on pub/sub (and wake
    /// once at the holder's deadline, in case its lease lapses instead); they do not poll.
    /// Dropping the future leaves the queue and passes on a lease already handed to it.
    ///
    /// # Errors
    /// Those of [`try_lock`](Self::try_lock), at the first poll.
    pub fn acquire(&self, name: &str, owner: &str, ttl: Duration) -> RedisAcquire {
        let checked = check_request(name, owner, ttl, &self.inner.config.limits());
        RedisAcquire::new(self.clone(), name, owner, ttl, checked)
    }

    /// The live lease on `name`: `Ok(None)` when the name is free, its lease lapsed, or
    /// `name` is not a valid lock name (then without a round trip). The deadline is on the
    /// server's clock.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when Redis does not answer within the `io_timeout`.
    pub fn holder(&self, name: &str) -> RedisFuture<'_, Option<LeaseInfo>> {
        let valid = check_name(name, &self.inner.config.limits()).is_ok();
        let name = name.to_owned();
        BoxedFuture::new(async move {
            if !valid {
                return Ok(None);
            }
            let reply: Vec<String> = self.run(&SCRIPTS.holder, &name, &[]).await?;
            lease_from(&name, &reply)
        })
    }

    /// Frees `name` whoever holds it, as an operator frees a stuck lock, and resolves to the
    /// lease it ended: `Ok(None)` when the name had no live lease (or is not a valid name:
    /// then without a round trip).
    ///
    /// The lease goes to the first waiter, if any, with a larger token. The old holder's
    /// renewals fail with [`LockError::Expired`], its `release` answers `false`, and its
    /// pending [`keep_alive`](RedisLock::keep_alive) and [`lapsed`](RedisLock::lapsed) are
    /// woken (by pub/sub) to find out at once.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when Redis does not answer within the `io_timeout`.
    ///
    /// # Example
    /// ```no_run
    /// # async fn run(locks: alkstore_redis::RedisLocks) -> Result<(), alkstore_mem::LockError> {
    /// if let Some(ended) = locks.force_release("migration").await? {
    ///     println!("freed {} held by {} (token {})", ended.name(), ended.owner(), ended.token());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn force_release(&self, name: &str) -> RedisFuture<'_, Option<LeaseInfo>> {
        let valid = check_name(name, &self.inner.config.limits()).is_ok();
        let name = name.to_owned();
        BoxedFuture::new(async move {
            if !valid {
                return Ok(None);
            }
            let reply: Vec<String> = self.run(&SCRIPTS.force_release, &name, &[]).await?;
            let ended = lease_from(&name, &reply)?;
            if let Some(lease) = &ended {
                alkstore_mem::events::force_released(lease);
            }
            Ok(ended)
        })
    }

    /// The held leases and the queued waiters of every name in the namespace, for operators
    /// and admin pages: leases sorted by name, waiters by name and then in the order they
    /// will be served.
    ///
    /// It lists the namespace's keys with `SCAN` (a walk over the whole keyspace of the
    /// database, in steps, never blocking the server for long), then reads the names in
    /// batches, each batch one script on the server's clock. Each name is a consistent view;
    /// the whole is not one instant, as with the in-memory engine's shards.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when a step does not answer within the `io_timeout`.
    ///
    /// # Example
    /// ```no_run
    /// # async fn run(locks: alkstore_redis::RedisLocks) -> Result<(), alkstore_mem::LockError> {
    /// let snapshot = locks.snapshot().await?;
    /// for lease in &snapshot.held {
    ///     println!("{} held by {} until {}", lease.name(), lease.owner(), lease.deadline());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn snapshot(&self) -> RedisFuture<'_, Snapshot> {
        BoxedFuture::new(crate::snapshot::snapshot(self))
    }

    /// A multiplexed connection to run other commands on (the snapshot's `SCAN`).
    pub(crate) fn connection(&self) -> ConnectionManager {
        self.inner.conn.clone()
    }

    /// Test builds only: the next script this store runs has its reply dropped after the
    /// server ran it and is run again, as after a connection that died before the reply
    /// came back (the case the retry in `run` must survive).
    #[cfg(feature = "test-clock")]
    #[doc(hidden)]
    pub fn lose_next_reply_for_test(&self) {
        self.inner.lose_next_reply.store(true, Ordering::SeqCst);
    }

    /// Test builds only: moves this namespace's lease clock forward by `by` and wakes every
    /// sleeper of every process sharing the namespace, so that each re-checks at the new time.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when Redis does not answer within the `io_timeout`.
    #[cfg(feature = "test-clock")]
    pub async fn advance_test_clock(&self, by: Duration) -> Result<(), LockError> {
        let mut conn = self.inner.conn.clone();
        let offset = format!("{}offset", self.inner.prefix);
        let channel = format!("{}wake", self.inner.prefix);
        let by = i64::try_from(micros(by)).unwrap_or(i64::MAX);
        let mut pipe = redis::pipe();
        pipe.atomic()
            .incr(&offset, by)
            .ignore()
            .publish(&channel, "*")
            .ignore();
        let io = self.inner.config.io_timeout();
        match tokio::time::timeout(io, pipe.query_async::<()>(&mut conn)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(unavailable(format!("redis: {e}"))),
            Err(_) => Err(unavailable(format!("redis did not answer within {io:?}"))),
        }
    }
}

/// A script argument, as an object (so that one call can pass arguments of several types).
pub(crate) trait ToRedisArgsDyn: Sync {
    fn push_to(&self, invocation: &mut redis::ScriptInvocation<'_>);
}

impl<T: ToRedisArgs + Sync> ToRedisArgsDyn for T {
    fn push_to(&self, invocation: &mut redis::ScriptInvocation<'_>) {
        invocation.arg(self);
    }
}

impl fmt::Debug for RedisLocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisLocks")
            .field("namespace", &self.inner.config.namespace())
            .field("io_timeout", &self.inner.config.io_timeout())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::redacted;

    #[test]
    fn redacted_urls_keep_scheme_host_port_and_db_only() {
        assert_eq!(
            redacted("redis://user:hunter2@127.0.0.1:6379/2"),
            "redis://127.0.0.1:6379/2"
        );
        assert_eq!(redacted("rediss://:hunter2@h:1/"), "rediss://h:1/");
        assert_eq!(redacted("redis://us@er:hun/ter@2@h:1/0"), "redis://h:1/0");
        assert_eq!(redacted("redis://h/"), "redis://h/");
        assert_eq!(
            redacted("redis+unix:///run/redis.sock?db=1&pass=hunter2"),
            "redis+unix:///run/redis.sock"
        );
        assert!(!redacted("user:hunter2@h:1").contains("hunter2"));
    }
}
