//! Hostile review of 0.3 (issue 14): what the docs, the CHANGELOG and the Makefile promise,
//! checked against the repository. Each test reads files only (no network, no server).
//! Run with `cargo test -p alkstore-mem --test review14_docs`.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("core/ is in the repository")
        .to_path_buf()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The package names of the workspace's crates.
fn workspace_crates() -> Vec<String> {
    let manifest = read("Cargo.toml");
    let members = manifest
        .split("members = [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("a members list");
    members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| {
            let cargo = read(&format!("{m}/Cargo.toml"));
            let line = cargo
                .lines()
                .find(|l| l.starts_with("name = "))
                .expect("a package name");
            line.trim_start_matches("name = ")
                .trim_matches('"')
                .to_owned()
        })
        .collect()
}

/// The CHANGELOG's 0.3.0 section says "two new engines on the same contract" and lists
/// `alkstore-pg` and `alkstore-idb` among the crates it covers "from 0.3"; the README and
/// `Fence`'s docs send users who need a liveness check to "the PostgreSQL engine's
/// `fence()`". No such crate is in the workspace.
#[test]
fn every_engine_the_docs_name_exists() {
    let crates = workspace_crates();
    let mut missing = Vec::new();
    for (doc, text) in [
        ("CHANGELOG.md", read("CHANGELOG.md")),
        ("README.md", read("README.md")),
        ("core/src/fence.rs", read("core/src/fence.rs")),
    ] {
        for (said, krate) in [
            ("alkstore-pg", "alkstore-pg"),
            ("alkstore-idb", "alkstore-idb"),
            ("PostgreSQL engine", "alkstore-pg"),
        ] {
            if text.contains(said) && !crates.iter().any(|c| c == krate) {
                missing.push(format!(
                    "{doc} names {said:?}, but {krate} is not a crate here"
                ));
            }
        }
    }
    assert!(missing.is_empty(), "{missing:#?}\n(workspace: {crates:?})");
}

/// The Redis crate's README (0.3.0) tells users to depend on `alkstore-redis = "0.2"` and
/// `alkstore-mem = "0.2"`: the release without snapshot, force_release, `keep_alive(&self)`
/// or `LockOptions`, which the same README then describes.
#[test]
fn the_redis_readme_depends_on_the_version_it_describes() {
    let readme = read("adapters/redis/README.md");
    let version = env!("CARGO_PKG_VERSION"); // the workspace version, 0.3.0
    let minor = version.rsplit_once('.').map_or(version, |(m, _)| m);
    for dep in ["alkstore-redis", "alkstore-mem"] {
        let line = readme
            .lines()
            .find(|l| l.starts_with(&format!("{dep} = ")))
            .unwrap_or_else(|| panic!("{dep} in the README's [dependencies]"));
        assert!(line.contains(&format!("\"{minor}\"")), "README: {line}");
    }
}

/// The CHANGELOG: "`Fence` ... Every demo uses it." The core's example (`basic.rs`, which
/// shows fencing) hand-rolls its own `newest_token_seen` check, and the browser example
/// compares tokens without a fence.
#[test]
fn every_demo_that_shows_fencing_uses_the_cores_fence() {
    let mut hand_rolled = Vec::new();
    for example in [
        "core/examples/basic.rs",
        "adapters/web/examples/registry.rs",
        "adapters/tokio/examples/demo.rs",
        "adapters/redis/tools/src/bin/redis-demo/main.rs",
    ] {
        let text = read(example);
        if text.contains("token") && !text.contains("Fence") {
            hand_rolled.push(example);
        }
    }
    assert!(
        hand_rolled.is_empty(),
        "fencing without Fence: {hand_rolled:?}"
    );
}

/// The CHANGELOG says whether `rediss://` reaches the Redis engine in the tool, and the
/// tool's list of served schemes (cli/src/served.rs) agrees.
#[test]
fn the_changelog_says_what_the_cli_does_with_rediss() {
    let schemes = read("cli/src/served.rs");
    let served = schemes.contains("\"rediss://\"");
    let changelog = read("CHANGELOG.md");
    let claims = changelog.contains("`rediss://` reaches the Redis engine");
    assert_eq!(
        claims, served,
        "CHANGELOG claims rediss:// reaches the engine: {claims}; the tool serves it: {served}"
    );
}

/// The Makefile refuses a REDIS_PORT that a Redis test starts a server of its own on
/// (`REDIS_FAULT_PORTS`), since that test would then find the shared server there ("not
/// touching it") and fail. tests/tracing.rs starts one on 6397, which is not in the list:
/// `make test-redis REDIS_PORT=6397` is accepted and fails (and review_x.rs's header even
/// suggests 6397 as the shared port).
#[test]
fn the_makefile_refuses_every_port_a_redis_test_starts_a_server_on() {
    let makefile = read("Makefile");
    let listed: Vec<u16> = makefile
        .lines()
        .find(|l| l.starts_with("REDIS_FAULT_PORTS :="))
        .expect("REDIS_FAULT_PORTS")
        .trim_start_matches("REDIS_FAULT_PORTS :=")
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    let mut unlisted = Vec::new();
    let dir = repo().join("adapters/redis/tests");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for part in text.split("RedisServer::start(").skip(1) {
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(port) = digits.parse::<u16>() {
                if !listed.contains(&port) {
                    let name = file.file_name().unwrap().to_string_lossy().into_owned();
                    unlisted.push((name, port));
                }
            }
        }
    }
    assert!(
        unlisted.is_empty(),
        "servers started on ports REDIS_FAULT_PORTS ({listed:?}) does not refuse: {unlisted:?}"
    );
}
