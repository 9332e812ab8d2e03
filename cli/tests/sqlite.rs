//! The built `alkstore` on a SQLite file (no server): `list`, `holder`, `release` on the
//! SQLite engine, its table prefix given as `--namespace`.

use std::process::Command;
use std::time::Duration;

const MINUTE: Duration = Duration::from_secs(60);

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn alkstore(url: &str, args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_alkstore"))
        .args(["--url", url])
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

fn scratch() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "alkstore-cli-sqlite-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn list_holder_and_release_on_a_sqlite_file() {
    let dir = scratch();
    let path = dir.join("locks.db");
    let url = format!("sqlite://{}", path.display());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let locks = alkstore_sqlite::open(&path).await.unwrap();
        let lock = locks
            .try_lock("invoice/1001", "worker-7", MINUTE)
            .await
            .unwrap()
            .unwrap();
        let run = alkstore(&url, &["list"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(
            run.stdout.contains("invoice/1001") && run.stdout.contains("worker-7"),
            "{}",
            run.stdout
        );
        assert!(
            run.stdout.contains(&lock.token().to_string()),
            "{}",
            run.stdout
        );
        let run = alkstore(&url, &["holder", "invoice/1001"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(run.stdout.contains("worker-7"), "{}", run.stdout);
        let run = alkstore(&url, &["--json", "holder", "invoice/1001"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(
            run.stdout.contains("\"owner\":\"worker-7\""),
            "{}",
            run.stdout
        );
        let run = alkstore(&url, &["release", "invoice/1001"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(!lock.is_held().await.unwrap());
        let run = alkstore(&url, &["holder", "invoice/1001"]);
        assert_eq!(run.code, 1, "not held: {}", run.stdout);
    });
    // A missing file or namespace is a usage error; nothing is created.
    let missing = dir.join("nope.db");
    let run = alkstore(&format!("sqlite://{}", missing.display()), &["list"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(!missing.exists());
    let run = alkstore(&url, &["--namespace", "other", "list"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("namespace"), "{}", run.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}
