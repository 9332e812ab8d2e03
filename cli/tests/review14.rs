//! Hostile review of the `alkstore` tool (issue 14). Run with
//! `scripts/redis-run.sh --port 6420 -- cargo test -p alkstore-cli --test review14`.

mod common;

use std::time::Duration;

use alkstore_redis::{RedisConfig, RedisLocks};
use common::{alkstore, fresh_namespace, runtime, store_in, url};

const MINUTE: Duration = Duration::from_secs(60);

/// An application that configured longer names (`RedisConfig::with_max_name_len(1024)`, a
/// documented setting) holds a lock whose name is 300 bytes. `alkstore list` shows it, but
/// `alkstore holder` and `alkstore release` refuse the name as a usage error ("over the
/// limit of 256"): the tool checks names against the core's default limits, on the
/// assumption (args.rs) that "the engines open with the core's default limits". The one
/// stuck lock the operator needs to break cannot be broken with the tool.
#[test]
fn release_works_for_every_name_that_list_shows() {
    let rt = runtime();
    let ns = fresh_namespace();
    let config = RedisConfig::new()
        .with_namespace(&ns)
        .with_max_name_len(1024);
    let store = rt
        .block_on(RedisLocks::connect_with(&url(), config))
        .unwrap();
    let name = format!("tenant/{}", "x".repeat(293));
    assert_eq!(name.len(), 300);
    let stuck = rt
        .block_on(store.try_lock(&name, "worker-1", MINUTE))
        .unwrap()
        .unwrap();
    let listed = alkstore(&ns, &["list"]);
    assert_eq!(listed.code, 0, "{listed:?}");
    assert!(listed.stdout.contains(&name), "list shows it: {listed:?}");
    let holder = alkstore(&ns, &["holder", &name]);
    assert_eq!(holder.code, 0, "holder of a listed lock: {holder:?}");
    let released = alkstore(&ns, &["release", &name]);
    assert_eq!(released.code, 0, "release of a listed lock: {released:?}");
    assert!(!rt.block_on(stuck.is_held()).unwrap());
}

/// `shown` (render.rs) promises that "`\` [is shown] as `\\` when something was escaped, so
/// that the escaping can be read back". It doubles backslashes only when the same text also
/// holds a character it escapes, so two different owners print the same: one holding ESC
/// (escaped as `\u{1b}`) and one holding the six characters `\u{1b}` literally. An
/// operator cannot tell which worker holds the lock. (The same goes for names: a name with
/// U+202E and a name spelt `\u{202e}` print alike, and `release` of what was printed breaks
/// the other one.)
#[test]
fn different_owners_never_print_alike() {
    let rt = runtime();
    let ns = fresh_namespace();
    let store = rt.block_on(store_in(&ns));
    let _a = rt
        .block_on(store.try_lock("a", "worker\u{1b}", MINUTE))
        .unwrap()
        .unwrap();
    let _b = rt
        .block_on(store.try_lock("b", r"worker\u{1b}", MINUTE))
        .unwrap()
        .unwrap();
    let owner_of = |name: &str| {
        let run = alkstore(&ns, &["holder", name]);
        assert_eq!(run.code, 0, "{run:?}");
        let row = run.stdout.lines().nth(1).unwrap().to_owned();
        row.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .nth(1)
            .unwrap()
            .to_owned()
    };
    let (a, b) = (owner_of("a"), owner_of("b"));
    assert_ne!(a, b, "two different owners print as {a:?}");
}

/// What held up: hostile arguments are usage errors (exit 2) in one line, never a panic.
#[test]
fn hostile_arguments_are_usage_errors() {
    let ns = fresh_namespace();
    for args in [
        &["holder", "alk:x"][..],
        &["release", "\u{202e}\n"],
        &["--namespace", "{x}", "list"],
        &["--namespace", "", "list"],
        &["list", "--json=1"],
        &["holder", &"n".repeat(100_000)],
    ] {
        let run = alkstore(&ns, args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {run:?}");
    }
}
