//! The namespace on PostgreSQL: a schema name the engine refuses is a usage error (exit 2,
//! as a bad Redis namespace is), and a schema the database does not have is one too: the
//! operator's view never installs the engine's schema, so a mistyped `--namespace` leaves
//! nothing behind. Run by `make test-cli` against its scratch cluster.

mod common;

use common::{Run, alkstore_env};

/// The test cluster's URL (set by scripts/pg-run.sh).
fn pg_url() -> String {
    std::env::var("ALKSTORE_PG_URL").expect("ALKSTORE_PG_URL is not set: run `make test-cli`")
}

fn run_pg(url: &str, args: &[&str]) -> Run {
    let mut all = vec!["--url", url];
    all.extend_from_slice(args);
    alkstore_env(&all, &[])
}

#[test]
fn a_refused_schema_is_a_usage_error_as_on_redis() {
    let url = pg_url();
    let long = "s".repeat(64);
    for ns in ["pg_x", "a;b", "a b", long.as_str()] {
        let run = run_pg(&url, &["--namespace", ns, "list"]);
        assert_eq!(run.code, 2, "--namespace {ns:?}: {run:?}");
        assert!(run.stderr.contains("schema"), "{run:?}");
    }
}

#[test]
fn a_mistyped_schema_is_a_usage_error_and_is_not_created() {
    let url = pg_url();
    let ns = format!("typo_{}", std::process::id());
    for args in [&["list"][..], &["holder", "job"], &["release", "job"]] {
        let mut all = vec!["--namespace", ns.as_str()];
        all.extend_from_slice(args);
        let run = run_pg(&url, &all);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert!(run.stderr.contains("does not exist"), "{run:?}");
    }
    let psql = std::process::Command::new(format!(
        "{}/psql",
        std::env::var("PG_BIN").expect("PG_BIN (set by scripts/pg-run.sh)")
    ))
    .args([
        url.as_str(),
        "-Atc",
        &format!("SELECT count(*) FROM pg_namespace WHERE nspname = '{ns}'"),
    ])
    .output()
    .expect("psql runs");
    assert_eq!(String::from_utf8_lossy(&psql.stdout).trim(), "0");
}
