//! The Lua scripts, one per operation, assembled once from the `.lua` files next to this one,
//! and how their arguments and replies are written and read.

use std::sync::LazyLock;
use std::time::Duration;

use alkstore_kit::unavailable;
use alkstore_mem::{LockError, Timestamp};
use redis::{Script, ToRedisArgs};

/// The clock every script reads: the server's TIME, plus the test offset in `test-clock` builds.
#[cfg(not(feature = "test-clock"))]
const CLOCK: &str = include_str!("scripts/clock.lua");
#[cfg(feature = "test-clock")]
const CLOCK: &str = include_str!("scripts/clock_test.lua");
const COMMON: &str = include_str!("scripts/common.lua");

/// Every script, built once per process. Each runs by EVALSHA, and by EVAL (its source) on a
/// server or node that does not have it: after a restart or `SCRIPT FLUSH`, or on a replica
/// just promoted on a Redis Cluster, which the client's `SCRIPT LOAD` (sent to the masters it
/// knows) may not reach.
pub(crate) struct Scripts {
    pub(crate) try_lock: Lua,
    pub(crate) holder: Lua,
    pub(crate) renew: Lua,
    pub(crate) is_held: Lua,
    pub(crate) release: Lua,
    pub(crate) acquire: Lua,
    pub(crate) cancel: Lua,
    pub(crate) force_release: Lua,
    pub(crate) snapshot: Lua,
}

/// One script: its [`Script`] (its SHA1, for EVALSHA) and its source (for EVAL).
pub(crate) struct Lua {
    script: Script,
    source: String,
}

impl std::ops::Deref for Lua {
    type Target = Script;

    fn deref(&self) -> &Script {
        &self.script
    }
}

fn script(body: &str) -> Lua {
    let source = [CLOCK, COMMON, body].concat();
    Lua {
        script: Script::new(&source),
        source,
    }
}

pub(crate) static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
    try_lock: script(include_str!("scripts/try_lock.lua")),
    holder: script(include_str!("scripts/holder.lua")),
    renew: script(include_str!("scripts/renew.lua")),
    is_held: script(include_str!("scripts/is_held.lua")),
    release: script(include_str!("scripts/release.lua")),
    acquire: script(include_str!("scripts/acquire.lua")),
    cancel: script(include_str!("scripts/cancel.lua")),
    force_release: script(include_str!("scripts/force_release.lua")),
    snapshot: script(include_str!("scripts/snapshot.lua")),
});

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

/// Parses field `i` of a script's reply as a number.
pub(crate) fn field(reply: &[String], i: usize) -> Result<u64, LockError> {
    reply
        .get(i)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| unavailable(format!("unexpected reply from a lock script: {reply:?}")))
}

/// A script argument, as an object (so that one call can pass arguments of several types).
pub(crate) trait ToRedisArgsDyn: Sync {
    fn push_to_cmd(&self, cmd: &mut redis::Cmd);
}

impl<T: ToRedisArgs + Sync> ToRedisArgsDyn for T {
    fn push_to_cmd(&self, cmd: &mut redis::Cmd) {
        cmd.arg(self);
    }
}

/// A script's call on `name` with `args` as an `EVALSHA` command, its keys the namespace
/// prefix and, on a Redis Cluster (`cluster`), the [`guard_key`]; the script must be loaded
/// (`NOSCRIPT` otherwise).
pub(crate) fn evalsha(
    script: &Script,
    prefix: &str,
    cluster: bool,
    name: &str,
    args: &[&dyn ToRedisArgsDyn],
) -> redis::Cmd {
    command("EVALSHA", script.get_hash(), prefix, cluster, name, args)
}

/// The same call as an `EVAL` command: the script's source, which runs on whichever
/// node the namespace's key routes to, loaded there or not.
pub(crate) fn eval(
    lua: &Lua,
    prefix: &str,
    cluster: bool,
    name: &str,
    args: &[&dyn ToRedisArgsDyn],
) -> redis::Cmd {
    command("EVAL", &lua.source, prefix, cluster, name, args)
}

fn command(
    verb: &str,
    script: &str,
    prefix: &str,
    cluster: bool,
    name: &str,
    args: &[&dyn ToRedisArgsDyn],
) -> redis::Cmd {
    let mut cmd = redis::cmd(verb);
    cmd.arg(script);
    if cluster {
        cmd.arg(2).arg(prefix).arg(guard_key(prefix));
    } else {
        cmd.arg(1).arg(prefix);
    }
    cmd.arg(name);
    for arg in args {
        arg.push_to_cmd(&mut cmd);
    }
    cmd
}

/// The second key every script declares on a Redis Cluster, `{ns}:!`, which (like `{ns}:`)
/// never exists: with two declared keys and none present, a cluster whose slot of the
/// namespace is migrating answers `ASK` then `TRYAGAIN` (never running the script on a
/// half-moved namespace) until the slot has moved; see `cluster.rs`. Scripts never read it,
/// so elsewhere (one server, Sentinel) it is left out: each key costs the server work on
/// every call (about 1.5k instructions per script on Redis 7.0).
fn guard_key(prefix: &str) -> String {
    format!("{prefix}!")
}

/// Runs `lua` on `name` with `args` once on `conn`: EVALSHA, and where the server or node
/// does not have the script (nothing of it ran) its source by EVAL, which runs wherever the key
/// routes. (`SCRIPT LOAD` then EVALSHA, as the client library does, failed on a Redis Cluster
/// whose master had just been killed: the load went to the masters the client knew, not to
/// the promoted replica.) A lost reply or a dropped connection is the caller's to retry, the
/// whole call, EVAL included.
pub(crate) async fn call<T: redis::FromRedisValue>(
    conn: &mut impl redis::aio::ConnectionLike,
    lua: &Lua,
    prefix: &str,
    cluster: bool,
    name: &str,
    args: &[&dyn ToRedisArgsDyn],
) -> redis::RedisResult<T> {
    match evalsha(lua, prefix, cluster, name, args)
        .query_async(conn)
        .await
    {
        Err(e) if no_script(&e) => {
            eval(lua, prefix, cluster, name, args)
                .query_async(conn)
                .await
        }
        other => other,
    }
}

/// Whether `e` is the server's `NOSCRIPT`: it does not have the script (nothing of it ran).
pub(crate) fn no_script(e: &redis::RedisError) -> bool {
    e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
}

/// A Redis error as the contract's `Unavailable`.
pub(crate) fn failed(e: &redis::RedisError) -> LockError {
    unavailable(format!("redis: {e}"))
}
