//! The built `alkstore` against a real PostgreSQL (`make test-cli` starts one): the same
//! commands as on Redis, on the PostgreSQL engine, its schema given as `--namespace`.

mod common;

use std::process::Command;
use std::time::Duration;

use alkstore_mem::LockError;
use alkstore_pg::{PgConfig, PgLocks};
use common::{Run, fresh_namespace, runtime};

const MINUTE: Duration = Duration::from_secs(60);

/// The test cluster's URL. Tests FAIL without it: run them with `make test-cli`.
fn pg_url() -> String {
    std::env::var("ALKSTORE_PG_URL").unwrap_or_else(|_| {
        panic!(
            "ALKSTORE_PG_URL is not set: these tests run the alkstore binary against a \
             PostgreSQL. Run `make test-cli`, which starts a throwaway cluster and sets it"
        )
    })
}

/// A store of the test cluster in schema `schema`.
async fn pg_store(schema: &str) -> PgLocks {
    PgLocks::connect_with(&pg_url(), PgConfig::new().with_schema(schema))
        .await
        .expect("the test PostgreSQL answers")
}

/// Runs `alkstore --url <cluster> --namespace schema args...`.
fn alkstore_pg(schema: &str, args: &[&str]) -> Run {
    let url = pg_url();
    let output = Command::new(env!("CARGO_BIN_EXE_alkstore"))
        .args(["--url", &url, "--namespace", schema])
        .args(args)
        .env_remove("ALKSTORE_URL")
        .output()
        .expect("the alkstore binary runs");
    Run {
        code: output.status.code().expect("exited"),
        stdout: String::from_utf8(output.stdout).expect("UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("UTF-8"),
    }
}

/// A schema name PostgreSQL takes as an identifier: the shared fresh namespace, lowercased,
/// with `-` as `_`.
fn fresh_schema() -> String {
    fresh_namespace().replace('-', "_").to_lowercase()
}

#[test]
fn list_holder_and_release_work_on_postgres_as_on_redis() {
    let rt = runtime();
    let schema = fresh_schema();
    let store = rt.block_on(pg_store(&schema));
    let mut held = rt
        .block_on(store.try_lock("invoice/1001", "worker-1", MINUTE))
        .unwrap()
        .unwrap();
    let waiting = {
        let s = store.clone();
        rt.spawn(async move { s.acquire("invoice/1001", "worker-2", MINUTE).await })
    };
    // Until the waiter is in line (the snapshot lists it).
    for _ in 0..200 {
        if !rt.block_on(store.snapshot()).unwrap().waiting.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }

    let run = alkstore_pg(&schema, &["list"]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    assert!(run.stdout.contains(": 1 held, 1 waiting"), "{}", run.stdout);
    assert!(run.stdout.contains("invoice/1001") && run.stdout.contains("worker-1"));
    assert!(
        run.stdout.contains(&held.token().to_string()),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("worker-2"), "{}", run.stdout);

    let run = alkstore_pg(&schema, &["--json", "holder", "invoice/1001"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("\"owner\":\"worker-1\""),
        "{}",
        run.stdout
    );
    assert_eq!(alkstore_pg(&schema, &["holder", "free"]).code, 1);

    let run = alkstore_pg(&schema, &["release", "invoice/1001"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .starts_with("released invoice/1001 held by worker-1"),
        "{}",
        run.stdout
    );
    assert!(matches!(
        rt.block_on(held.renew(MINUTE)),
        Err(LockError::Expired { .. })
    ));
    let next = rt
        .block_on(waiting)
        .unwrap()
        .unwrap()
        .expect("handed to worker-2");
    assert!(
        next.token() > held.token(),
        "the next grant's token is larger"
    );
    assert_eq!(alkstore_pg(&schema, &["release", "nope"]).code, 1);
}

#[test]
fn an_unreachable_postgres_exits_3_without_its_password() {
    let run = common::alkstore_env(
        &["--url", "postgres://admin:hunter2@127.0.0.1:1/app", "list"],
        &[],
    );
    assert_eq!(run.code, 3, "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
    assert!(!run.stderr.contains("hunter2"), "{run:?}");
}
