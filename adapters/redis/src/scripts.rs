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

/// Every script, built once per process (a [`Script`] knows its SHA1, runs by EVALSHA and
/// falls back to EVAL when the server lost its script cache, as after a restart).
pub(crate) struct Scripts {
    pub(crate) try_lock: Script,
    pub(crate) holder: Script,
    pub(crate) renew: Script,
    pub(crate) is_held: Script,
    pub(crate) release: Script,
    pub(crate) acquire: Script,
    pub(crate) cancel: Script,
    pub(crate) force_release: Script,
    pub(crate) snapshot: Script,
}

fn script(body: &str) -> Script {
    Script::new(&[CLOCK, COMMON, body].concat())
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
    fn push_to(&self, invocation: &mut redis::ScriptInvocation<'_>);
    fn push_to_cmd(&self, cmd: &mut redis::Cmd);
}

impl<T: ToRedisArgs + Sync> ToRedisArgsDyn for T {
    fn push_to(&self, invocation: &mut redis::ScriptInvocation<'_>) {
        invocation.arg(self);
    }
    fn push_to_cmd(&self, cmd: &mut redis::Cmd) {
        cmd.arg(self);
    }
}

/// The same invocation as [`invocation`], as an `EVALSHA` command (to pipeline it with a
/// `WAIT`); the script must be loaded (`NOSCRIPT` otherwise).
pub(crate) fn evalsha(
    script: &Script,
    prefix: &str,
    cluster: bool,
    name: &str,
    args: &[&dyn ToRedisArgsDyn],
) -> redis::Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(script.get_hash());
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

/// A script's invocation on `name` with `args`, its keys the namespace prefix and, on a Redis
/// Cluster (`cluster`), the [`guard_key`].
pub(crate) fn invocation<'a>(
    script: &'a Script,
    prefix: &str,
    cluster: bool,
    name: &str,
    args: &[&dyn ToRedisArgsDyn],
) -> redis::ScriptInvocation<'a> {
    let mut invocation = script.key(prefix);
    if cluster {
        invocation.key(guard_key(prefix));
    }
    invocation.arg(name);
    for arg in args {
        arg.push_to(&mut invocation);
    }
    invocation
}

/// A Redis error as the contract's `Unavailable`.
pub(crate) fn failed(e: &redis::RedisError) -> LockError {
    unavailable(format!("redis: {e}"))
}
