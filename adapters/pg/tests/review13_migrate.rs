//! Issue-13 review: 8 OS processes install two fresh schemas at the same instant (4 each);
//! every connect succeeds, each schema is installed once, and the two never meet. The
//! children are this test binary itself, run with `R13_CHILD` set.

mod common;

use std::process::Command;
use std::time::Duration;

use alkstore_pg::{PgConfig, PgLocks};

#[test]
fn child() {
    let Ok(schema) = std::env::var("R13_CHILD") else {
        return;
    };
    let start: u64 = std::env::var("R13_START").unwrap().parse().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let now = std::time::UNIX_EPOCH.elapsed().unwrap().as_millis() as u64;
        tokio::time::sleep(Duration::from_millis(start.saturating_sub(now))).await;
        let config = PgConfig::new().with_schema(&schema);
        let locks = PgLocks::connect_with(&common::url(), config).await.unwrap();
        let got = locks
            .try_lock("m", "child", Duration::from_secs(60))
            .await
            .unwrap();
        println!(
            "R13 {}",
            got.map_or(0, |lock| {
                let token = lock.token();
                lock.detach();
                token
            })
        );
    });
}

#[test]
fn eight_processes_install_two_schemas_at_once() {
    let (a, b) = (common::fresh_schema(), common::fresh_schema());
    let start = std::time::UNIX_EPOCH.elapsed().unwrap().as_millis() as u64 + 1500;
    let spawned: Vec<_> = (0..8)
        .map(|i| {
            let schema = if i % 2 == 0 { a.clone() } else { b.clone() };
            let child = Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "child", "--nocapture", "--test-threads=1"])
                .env("R13_CHILD", &schema)
                .env("R13_START", start.to_string())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            (schema, child)
        })
        .collect();
    let mut granted = std::collections::HashMap::<String, Vec<u64>>::new();
    for (schema, child) in spawned {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "a child failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let token: u64 = stdout
            .lines()
            .find_map(|l| l.split_once("R13 ").map(|(_, t)| t.trim()))
            .unwrap()
            .parse()
            .unwrap();
        granted.entry(schema).or_default().push(token);
    }
    for (schema, tokens) in &granted {
        let winners: Vec<_> = tokens.iter().filter(|t| **t != 0).collect();
        assert_eq!(winners, [&1], "{schema}: {tokens:?}");
    }
}
