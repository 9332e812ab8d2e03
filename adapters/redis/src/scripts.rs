//! The Lua scripts, one per operation, assembled once from the `.lua` files next to this one.

use std::sync::LazyLock;

use redis::Script;

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
