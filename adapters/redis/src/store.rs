//! [`Redis`]: the engine under [`RedisLocks`](crate::RedisLocks): the connection, the
//! namespace, and the kit's [`Protocol`], one Lua script per operation.

use core::fmt;
#[cfg(feature = "test-clock")]
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use alkstore_kit::{Grant, Held, Protocol, Reply, Step, StepReply, WaitDeadline, unavailable};
use alkstore_mem::{LeaseInfo, LockError, Snapshot, Timestamp};

use crate::config::RedisConfig;
use crate::conn::{Conn, open};
use crate::listener::{RedisFallback, RedisListener};
use crate::scripts::{SCRIPTS, ToRedisArgsDyn, field, from_us, micros};
use crate::source::Source;

mod call;

/// The Redis engine: one multiplexed connection (to one server, reconnecting by itself; or
/// to the master that sentinels name, asking them again after a failure), where the pub/sub
/// subscriber and the clean-up connections go, and the namespace.
/// [`RedisLocks`](crate::RedisLocks) is the kit's store over it; reach it with
/// [`RedisLocks::engine`](alkstore_kit::Locks::engine).
pub struct Redis {
    conn: Conn,
    source: Source,
    config: RedisConfig,
    /// `{ns}:`, the first key of every script.
    prefix: String,
    /// Test builds only: drop the next script reply and run the script again.
    #[cfg(feature = "test-clock")]
    lose_next_reply: AtomicBool,
}

/// The lease in a `{owner, token, dl, ...}` reply on `name`; `None` for an empty reply.
fn lease_from(name: &str, reply: &[String]) -> Result<Option<LeaseInfo>, LockError> {
    let Some(owner) = reply.first() else {
        return Ok(None);
    };
    let (token, deadline) = (field(reply, 1)?, field(reply, 2)?);
    Ok(Some(LeaseInfo::new(name, owner, token, from_us(deadline))))
}

/// `Some(t)` for a server reading `us`, `None` for `0` (the scripts' "none").
fn optional(us: u64) -> Option<Timestamp> {
    (us != 0).then(|| from_us(us))
}

impl Redis {
    /// Refuses an empty namespace, or one that holds `{` or `}`.
    pub(crate) fn checked(config: &RedisConfig) -> Result<(), LockError> {
        let ns = config.namespace();
        if ns.is_empty() || ns.contains(['{', '}']) {
            return Err(unavailable(format!(
                "invalid RedisConfig: namespace {ns:?} must be non-empty and hold no '{{' or '}}'"
            )));
        }
        Ok(())
    }

    /// The engine on a connection made by [`open`] or `open_cluster`.
    pub(crate) fn from_parts(conn: Conn, source: Source, config: RedisConfig) -> Self {
        Redis {
            conn,
            source,
            prefix: format!("{{{}}}:", config.namespace()),
            config,
            #[cfg(feature = "test-clock")]
            lose_next_reply: AtomicBool::new(false),
        }
    }

    /// A multiplexed connection to run other commands on (the snapshot's `SCAN`).
    pub(crate) fn connection(&self) -> Conn {
        self.conn.clone()
    }

    /// Whether the connection is to a Redis Cluster (whose scripts declare the guard key).
    fn cluster(&self) -> bool {
        matches!(self.conn, Conn::Cluster(_))
    }

    /// `{ns}:`, the prefix of every key of the namespace.
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Test builds only: the next script this store runs has its reply dropped after the
    /// server ran it and is run again, as after a connection that died before the reply
    /// came back (the case the retry in `run` must survive).
    #[cfg(feature = "test-clock")]
    #[doc(hidden)]
    pub fn lose_next_reply_for_test(&self) {
        self.lose_next_reply.store(true, Ordering::SeqCst);
    }
}

impl Protocol for Redis {
    type Config = RedisConfig;
    type Listener = RedisListener;
    type Fallback = RedisFallback;
    const NAME: &'static str = "redis";

    /// Connects to the Redis at `url` (`redis://host:port/db`, `rediss://…`, or the master
    /// named by sentinels, `redis+sentinel://host:port[,host:port…]/master_name[/db]`) within
    /// the `io_timeout`; refuses an empty namespace, or one that holds `{` or `}`.
    async fn connect(url: &str, config: RedisConfig) -> Result<Self, LockError> {
        Redis::checked(&config)?;
        let (conn, source) = open(url, &config).await?;
        Ok(Redis::from_parts(conn, source, config))
    }

    fn config(&self) -> &RedisConfig {
        &self.config
    }

    async fn try_lock(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
        rid: &str,
    ) -> Result<Reply<Option<Grant>>, LockError> {
        let args: [&dyn ToRedisArgsDyn; 3] = [&owner, &micros(ttl), &rid];
        let (reply, acked): (Vec<String>, _) =
            self.run_waited(&SCRIPTS.try_lock, name, &args).await?;
        if reply.first().map(String::as_str) != Some("1") {
            let now = from_us(field(&reply, 2)?);
            return Ok(Reply { value: None, now });
        }
        // Not acknowledged: the kit withdraws the request (`cancel.lua` ends the lease).
        self.acked(acked, "grant")?;
        let grant = Grant {
            token: field(&reply, 1)?,
            deadline: from_us(field(&reply, 2)?),
        };
        let now = from_us(field(&reply, 3)?);
        Ok(Reply {
            value: Some(grant),
            now,
        })
    }

    async fn step(&self, step: Step<'_>) -> Result<StepReply, LockError> {
        let wait_us: i64 = step
            .wait_left
            .map_or(-1, |left| i64::try_from(micros(left)).unwrap_or(i64::MAX));
        // acquire.lua's wd: '' on the first step, the deadline it answered after (0: none),
        // 'end' once the client's bound of the wait has passed.
        let wd = match step.deadline {
            WaitDeadline::First => String::new(),
            WaitDeadline::Known(at) => at.map_or(0, |at| at.as_nanos() / 1000).to_string(),
            WaitDeadline::Over => "end".into(),
        };
        let (ttl_us, hb_us) = (micros(step.ttl), micros(step.heartbeat_expiry));
        let args: [&dyn ToRedisArgsDyn; 6] =
            [&step.owner, &ttl_us, &step.id, &wait_us, &wd, &hb_us];
        let (reply, acked): (Vec<String>, _) =
            self.run_waited(&SCRIPTS.acquire, step.name, &args).await?;
        if reply.first().map(String::as_str) == Some("1") {
            // Not acknowledged: the wait ends with the error and the kit withdraws the
            // waiter (`cancel.lua` passes the lease on).
            self.acked(acked, "grant")?;
        }
        let now = from_us(field(&reply, 3)?);
        Ok(match reply.first().map(String::as_str) {
            Some("1") => StepReply::Granted(Reply {
                value: Grant {
                    token: field(&reply, 1)?,
                    deadline: from_us(field(&reply, 2)?),
                },
                now,
            }),
            Some("2") => StepReply::Over,
            _ => StepReply::Queued {
                wait_deadline: optional(field(&reply, 1)?),
                head_holder: optional(field(&reply, 2)?),
                now,
            },
        })
    }

    /// `cancel.lua`: the entry leaves the queue, and a lease granted to `id` (a hand-off, a
    /// direct grant of a step or a `try_lock`, whose `waiter` field holds the id) and not
    /// picked up goes on to the next waiter. Scripts run in order on one connection, and the
    /// kit withdraws again once a step in flight has answered, so `unanswered` needs nothing
    /// more here.
    async fn withdraw(&self, name: &str, id: &str, _unanswered: bool) -> Result<(), LockError> {
        self.run::<redis::Value>(&SCRIPTS.cancel, name, &[&id])
            .await
            .map(drop)
    }

    async fn renew(
        &self,
        name: &str,
        token: u64,
        ttl: Duration,
    ) -> Result<Reply<Option<Timestamp>>, LockError> {
        let args: [&dyn ToRedisArgsDyn; 2] = [&token, &micros(ttl)];
        let (reply, acked): (Vec<String>, _) = self.run_waited(&SCRIPTS.renew, name, &args).await?;
        let live = reply.first().map(String::as_str) == Some("1");
        if live {
            self.acked(acked, "renewal")?;
        }
        let value = live.then(|| field(&reply, 1).map(from_us)).transpose()?;
        let now = from_us(field(&reply, 2)?);
        Ok(Reply { value, now })
    }

    async fn release(&self, name: &str, token: u64, rid: &str) -> Result<bool, LockError> {
        let mark = self.config.release_mark_ms();
        let args: [&dyn ToRedisArgsDyn; 3] = [&token, &rid, &mark];
        let released: String = self.run(&SCRIPTS.release, name, &args).await?;
        Ok(released == "1")
    }

    async fn is_held(&self, name: &str, token: u64) -> Result<Reply<Held>, LockError> {
        let reply: Vec<String> = self.run(&SCRIPTS.is_held, name, &[&token]).await?;
        let held = Held {
            live: reply.first().map(String::as_str) == Some("1"),
            deadline: from_us(field(&reply, 1)?),
        };
        let now = from_us(field(&reply, 2)?);
        Ok(Reply { value: held, now })
    }

    async fn holder(&self, name: &str) -> Result<Option<LeaseInfo>, LockError> {
        let reply: Vec<String> = self.run(&SCRIPTS.holder, name, &[]).await?;
        lease_from(name, &reply)
    }

    async fn force_release(&self, name: &str) -> Result<Option<LeaseInfo>, LockError> {
        let reply: Vec<String> = self.run(&SCRIPTS.force_release, name, &[]).await?;
        lease_from(name, &reply)
    }

    async fn snapshot(&self) -> Result<Snapshot, LockError> {
        self.read_snapshot().await
    }

    /// Test builds (feature `test-clock`): raises the namespace's offset `{ns}:offset`, which
    /// every script adds to the server's `TIME`, and publishes `*`.
    async fn advance_test_clock(&self, by: Duration) -> Result<(), LockError> {
        #[cfg(feature = "test-clock")]
        {
            let mut conn = self.conn.clone();
            let by = i64::try_from(micros(by)).unwrap_or(i64::MAX);
            let mut pipe = redis::pipe();
            pipe.atomic()
                .incr(format!("{}offset", self.prefix), by)
                .ignore()
                .publish(format!("{}wake", self.prefix), "*")
                .ignore();
            let io = self.config.io_timeout();
            match tokio::time::timeout(io, pipe.query_async::<()>(&mut conn)).await {
                Ok(answer) => answer.map_err(|e| crate::scripts::failed(&e)),
                Err(_) => Err(unavailable(format!("redis did not answer within {io:?}"))),
            }
        }
        #[cfg(not(feature = "test-clock"))]
        {
            let _ = by;
            Err(unavailable(
                "redis: this build has no test clock (feature \"test-clock\")",
            ))
        }
    }

    fn listener(&self) -> RedisListener {
        RedisListener::new(
            self.source.clone(),
            format!("{}wake", self.prefix),
            &self.config,
        )
    }

    fn fallback(&self) -> RedisFallback {
        RedisFallback::new(self.source.clone(), self.prefix.clone(), &self.config)
    }
}

impl fmt::Debug for Redis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redis")
            .field("namespace", &self.config.namespace())
            .field("io_timeout", &self.config.io_timeout())
            .finish_non_exhaustive()
    }
}
