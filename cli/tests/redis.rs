//! The built `alkstore` against a real Redis (`make test-cli`): what `list`, `holder` and
//! `release` print and exit with, checked against the engine's own view of the same locks.

mod common;

use std::time::Duration;

use alkstore_mem::LockError;
use alkstore_redis::RedisConfig;
use common::json::{self, Value};
use common::{
    alkstore, alkstore_env, fresh_namespace, runtime, store_in, until_waiting, url, utc_by_date,
};

const MINUTE: Duration = Duration::from_secs(60);

/// The cell of `row` (a table line) at `column`, splitting on runs of two or more spaces.
fn cells(row: &str) -> Vec<String> {
    row.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(String::from)
        .collect()
}

/// The number in a LEFT cell such as `59.8s`, in seconds.
fn seconds_left(cell: &str) -> f64 {
    cell.strip_suffix('s')
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a time left in seconds: {cell:?}"))
}

#[test]
fn list_shows_held_leases_and_waiters_in_queue_order() {
    let rt = runtime();
    let ns = fresh_namespace();
    let store = rt.block_on(store_in(&ns));
    let invoice = rt
        .block_on(store.try_lock("invoice/1001", "worker-1", MINUTE))
        .unwrap()
        .unwrap();
    let report = rt
        .block_on(store.try_lock("report", "cron", 60 * MINUTE))
        .unwrap()
        .unwrap();
    let mut waiters = Vec::new();
    for (i, owner) in ["worker-2", "worker-3"].into_iter().enumerate() {
        let s = store.clone();
        waiters.push(rt.spawn(async move { s.acquire("invoice/1001", owner, MINUTE).await }));
        rt.block_on(until_waiting(&store, i + 1));
    }

    let run = alkstore(&ns, &["list"]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].starts_with("server time 20") && lines[0].ends_with("Z: 2 held, 2 waiting"),
        "{}",
        run.stdout
    );
    assert_eq!(
        cells(lines[2]),
        ["NAME", "OWNER", "TOKEN", "DEADLINE (UTC)", "LEFT"]
    );
    let row = cells(lines[3]);
    let expected = [
        "invoice/1001".to_string(),
        "worker-1".into(),
        invoice.token().to_string(),
        utc_by_date(invoice.deadline(), 3),
    ];
    assert_eq!(row[..4], expected, "{}", run.stdout);
    let left = seconds_left(&row[4]);
    assert!(left > 30.0 && left <= 60.0, "{left}");
    let row = cells(lines[4]);
    assert_eq!(
        row[..4],
        [
            "report".to_string(),
            "cron".into(),
            report.token().to_string(),
            utc_by_date(report.deadline(), 3)
        ]
    );
    assert!(row[4].starts_with("59m ") || row[4] == "1h", "{}", row[4]);
    assert_eq!(cells(lines[6]), ["WAITING FOR", "OWNER", "POSITION"]);
    assert_eq!(cells(lines[7]), ["invoice/1001", "worker-2", "1"]);
    assert_eq!(cells(lines[8]), ["invoice/1001", "worker-3", "2"]);
    assert_eq!(lines.len(), 9, "{}", run.stdout);

    let run = alkstore(&ns, &["list", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout.lines().count(), 1);
    let v = json::parse(&run.stdout).expect("valid JSON");
    let held = v.get("held").items();
    assert_eq!(held.len(), 2);
    for (lease, lock) in held.iter().zip([&invoice, &report]) {
        assert_eq!(lease.get("name").str(), lock.name());
        assert_eq!(lease.get("owner").str(), lock.owner());
        assert_eq!(lease.get("token").u64(), lock.token());
        assert_eq!(lease.get("deadline").str(), utc_by_date(lock.deadline(), 9));
        let left = lease.get("left_ms").u64();
        let ttl = lock.ttl().as_millis() as u64;
        assert!(left > ttl / 2 && left <= ttl, "{left} of {ttl}");
    }
    let waiting: Vec<(&str, &str, u64)> = v
        .get("waiting")
        .items()
        .iter()
        .map(|w| {
            (
                w.get("name").str(),
                w.get("owner").str(),
                w.get("position").u64(),
            )
        })
        .collect();
    assert_eq!(
        waiting,
        [
            ("invoice/1001", "worker-2", 1),
            ("invoice/1001", "worker-3", 2)
        ]
    );
    assert!(v.get("now").str().ends_with('Z'));
    for waiter in waiters {
        waiter.abort();
    }
}

#[test]
fn holder_shows_one_lease_and_exits_1_for_a_free_name() {
    let rt = runtime();
    let ns = fresh_namespace();
    let store = rt.block_on(store_in(&ns));
    let lock = rt
        .block_on(store.try_lock("nightly", "host-1", MINUTE))
        .unwrap()
        .unwrap();

    let run = alkstore(&ns, &["holder", "nightly"]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", run.stdout);
    let row = cells(lines[1]);
    assert_eq!(
        row[..4],
        [
            "nightly".to_string(),
            "host-1".into(),
            lock.token().to_string(),
            utc_by_date(lock.deadline(), 3)
        ]
    );

    let run = alkstore(&ns, &["--json", "holder", "nightly"]);
    assert_eq!(run.code, 0, "{run:?}");
    let held = json::parse(&run.stdout).unwrap().get("held").clone();
    assert_eq!(held.get("owner").str(), "host-1");
    assert_eq!(held.get("token").u64(), lock.token());

    let run = alkstore(&ns, &["holder", "weekly"]);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (1, "weekly is not held\n", "")
    );
    let run = alkstore(&ns, &["holder", "weekly", "--json"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(json::parse(&run.stdout).unwrap().get("held"), &Value::Null);

    // A released lease is no longer shown.
    assert!(rt.block_on(lock.release()).unwrap());
    assert_eq!(alkstore(&ns, &["holder", "nightly"]).code, 1);
}

#[test]
fn release_ends_the_lease_its_holder_cannot_renew_and_the_next_grant_has_a_larger_token() {
    let rt = runtime();
    let ns = fresh_namespace();
    let store = rt.block_on(store_in(&ns));
    let mut stuck = rt
        .block_on(store.try_lock("migration", "deploy-3", 60 * MINUTE))
        .unwrap()
        .unwrap();
    let s = store.clone();
    let waiter = rt.spawn(async move { s.acquire("migration", "deploy-4", MINUTE).await });
    rt.block_on(until_waiting(&store, 1));

    let run = alkstore(&ns, &["release", "migration"]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    let said = format!(
        "released migration held by deploy-3 (fencing token {}); it had ",
        stuck.token()
    );
    assert!(run.stdout.starts_with(&said), "{}", run.stdout);
    assert!(
        run.stdout.ends_with(&format!(
            " left, until {}\n",
            utc_by_date(stuck.deadline(), 3)
        )),
        "{}",
        run.stdout
    );

    // The old holder's renew fails, its release touches nothing.
    let renewed = rt.block_on(stuck.renew(MINUTE));
    assert!(
        matches!(renewed, Err(LockError::Expired { .. })),
        "{renewed:?}"
    );
    let old_token = stuck.token();
    assert!(
        !rt.block_on(stuck.release()).unwrap(),
        "it was force-released"
    );
    // The head waiter got the lease, with a larger token.
    let next = rt
        .block_on(waiter)
        .unwrap()
        .unwrap()
        .expect("handed to the waiter");
    assert!(next.token() > old_token, "{} > {old_token}", next.token());
    let run = alkstore(&ns, &["--json", "holder", "migration"]);
    assert_eq!(
        json::parse(&run.stdout)
            .unwrap()
            .get("held")
            .get("owner")
            .str(),
        "deploy-4"
    );

    let run = alkstore(&ns, &["release", "migration", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let released = json::parse(&run.stdout).unwrap().get("released").clone();
    assert_eq!(
        (released.get("owner").str(), released.get("token").u64()),
        ("deploy-4", next.token())
    );
    let next_token = next.token();
    assert!(!rt.block_on(next.release()).unwrap());

    // Nothing left to release: exit 1, said on stdout.
    let run = alkstore(&ns, &["release", "migration"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (1, "nothing to release: migration is not held\n")
    );
    let run = alkstore(&ns, &["--json", "release", "migration"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        json::parse(&run.stdout).unwrap().get("released"),
        &Value::Null
    );
    let later = rt
        .block_on(store.try_lock("migration", "deploy-5", MINUTE))
        .unwrap()
        .unwrap();
    assert!(later.token() > next_token);
}

#[test]
fn hostile_names_and_owners_come_back_exact_in_json_and_escaped_on_a_terminal() {
    let rt = runtime();
    let ns = fresh_namespace();
    let store = rt.block_on(store_in(&ns));
    // Names hold no control characters (the core refuses them); owners may hold anything.
    let cases = [
        ("say \"hi\"", "quote\"s and back\\slash"),
        ("C:\\jobs\\", "tab\there\nnewline\r\u{0}nul\u{7f}"),
        ("zürich/日本/🔒", "\u{1b}[2Jclear\u{202e}fdp.exe"),
        ("line\u{2028}sep", "para\u{2029}sep \u{85}next"),
    ];
    let mut locks = Vec::new();
    for (name, owner) in cases {
        let lock = rt.block_on(store.try_lock(name, owner, MINUTE)).unwrap();
        locks.push(lock.expect("free"));
    }

    let run = alkstore(&ns, &["--json", "list"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout.lines().count(), 1, "one line: {:?}", run.stdout);
    let v = json::parse(&run.stdout).expect("valid, strict JSON");
    let mut got: Vec<(String, String)> = v
        .get("held")
        .items()
        .iter()
        .map(|l| {
            (
                l.get("name").str().to_owned(),
                l.get("owner").str().to_owned(),
            )
        })
        .collect();
    let mut want: Vec<(String, String)> = cases
        .iter()
        .map(|(n, o)| (n.to_string(), o.to_string()))
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);

    for (name, owner) in cases {
        let run = alkstore(&ns, &["--json", "holder", name]);
        assert_eq!(run.code, 0, "{name:?}: {run:?}");
        let held = json::parse(&run.stdout).unwrap().get("held").clone();
        assert_eq!(
            (held.get("name").str(), held.get("owner").str()),
            (name, owner)
        );
    }

    // On a terminal nothing raw gets through: no escape sequence, no bidi override, one row
    // per lease.
    let run = alkstore(&ns, &["list"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        !run.stdout
            .chars()
            .any(|c| c != '\n' && (c.is_control() || c == '\u{202e}')),
        "{:?}",
        run.stdout
    );
    assert_eq!(
        run.stdout.lines().count(),
        3 + cases.len(),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(r"\u{1b}[2Jclear\u{202e}fdp.exe"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("zürich/日本/🔒"), "{}", run.stdout);
    drop(locks);
}

#[test]
fn the_namespace_option_the_default_namespace_and_the_env_url() {
    let rt = runtime();
    let (ns, other) = (fresh_namespace(), fresh_namespace());
    let store = rt.block_on(store_in(&ns));
    let _lock = rt
        .block_on(store.try_lock("scoped", "a", MINUTE))
        .unwrap()
        .unwrap();
    assert!(alkstore(&ns, &["list"]).stdout.contains("1 held"));
    let run = alkstore(&other, &["list"]);
    assert!(run.stdout.contains(": 0 held, 0 waiting"), "{run:?}");
    assert_eq!(alkstore(&other, &["holder", "scoped"]).code, 1);

    // No --namespace: the engine's default, "alk". A name of this run's own.
    let default = rt
        .block_on(alkstore_redis::RedisLocks::connect_with(
            &url(),
            RedisConfig::new(),
        ))
        .unwrap();
    let name = format!("cli-default/{}", fresh_namespace());
    let lock = rt
        .block_on(default.try_lock(&name, "d", MINUTE))
        .unwrap()
        .unwrap();
    // And the URL from $ALKSTORE_URL.
    let run = alkstore_env(&["--json", "holder", &name], &[("ALKSTORE_URL", &url())]);
    assert_eq!(run.code, 0, "{run:?}");
    let held = json::parse(&run.stdout).unwrap().get("held").clone();
    assert_eq!(held.get("token").u64(), lock.token());
    let run = alkstore_env(&["--url", &url(), "release", &name], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!rt.block_on(lock.release()).unwrap());
}

#[test]
fn a_wrong_password_is_refused_with_exit_3_and_is_never_printed() {
    // The scratch server has no password: AUTH is refused, and the message must not quote it.
    let url = url().replacen("redis://", "redis://alice:hunter2-secret@", 1);
    let run = alkstore_env(&["--url", &url, "list"], &[]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(run.stdout.is_empty(), "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
    assert!(
        run.stderr
            .starts_with("alkstore: lock engine unavailable: "),
        "{run:?}"
    );
    assert!(!run.stderr.contains("hunter2"), "{run:?}");
}
