//! Several OS processes on one PostgreSQL: 4 processes x 200 acquire/release cycles on 4 names,
//! each critical section appending `enter`/`exit` lines with its token to one shared file.
//! No two critical sections of a name overlap, and a name's tokens increase in file order.
//!
//! The children are this test binary itself, run with `ALKSTORE_CHILD` set (see `child`).

mod common;

use std::collections::HashMap;
use std::io::Write;
use std::process::Command;
use std::time::Duration;

use alkstore_pg::{PgConfig, PgLocks};

const PROCESSES: usize = 4;
const CYCLES: usize = 200;
const NAMES: usize = 4;

/// The children's entry point: does nothing in a normal run; with `ALKSTORE_CHILD=worker` it
/// is one worker process of `four_processes_never_overlap_and_tokens_increase_in_file_order`.
#[test]
fn child() {
    let Ok(role) = std::env::var("ALKSTORE_CHILD") else {
        return;
    };
    assert_eq!(role, "worker");
    let file = std::env::var("ALKSTORE_CHILD_FILE").unwrap();
    let me: usize = std::env::var("ALKSTORE_CHILD_INDEX")
        .unwrap()
        .parse()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let schema = std::env::var("ALKSTORE_CHILD_NS").unwrap();
        let config = PgConfig::new().with_schema(schema).with_pool_size(2);
        let locks = PgLocks::connect_with(&common::url(), config).await.unwrap();
        // Start together, so that the processes contend from the first cycle.
        let start: u64 = std::env::var("ALKSTORE_CHILD_START")
            .unwrap()
            .parse()
            .unwrap();
        let now = std::time::UNIX_EPOCH.elapsed().unwrap().as_millis() as u64;
        tokio::time::sleep(Duration::from_millis(start.saturating_sub(now))).await;
        let mut out = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap();
        for cycle in 0..CYCLES {
            // Every process walks the names in the same order, so they contend for each one.
            let name = format!("name-{}", cycle % NAMES);
            let lock = locks
                .acquire(&name, &format!("p{me}"), Duration::from_secs(10))
                .timeout(Duration::from_secs(60))
                .await
                .unwrap()
                .expect("granted within a minute");
            let token = lock.token();
            out.write_all(format!("{name} enter {token} p{me}\n").as_bytes())
                .unwrap();
            if cycle % 16 == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            out.write_all(format!("{name} exit {token} p{me}\n").as_bytes())
                .unwrap();
            assert!(lock.release().await.unwrap(), "released while live");
        }
    });
}

#[test]
fn four_processes_never_overlap_and_tokens_increase_in_file_order() {
    let url = common::url();
    let dir = std::env::temp_dir().join(format!("alkstore-mp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sections.log");
    std::fs::File::create(&file).unwrap();
    let schema = common::fresh_schema();
    let exe = std::env::current_exe().unwrap();
    let started = std::time::Instant::now();
    let start_at = std::time::UNIX_EPOCH.elapsed().unwrap().as_millis() + 1500;
    let children: Vec<_> = (0..PROCESSES)
        .map(|i| {
            Command::new(&exe)
                .args(["--exact", "child", "--nocapture", "--test-threads=1", "-q"])
                .env("ALKSTORE_CHILD", "worker")
                .env("ALKSTORE_CHILD_FILE", &file)
                .env("ALKSTORE_CHILD_INDEX", i.to_string())
                .env("ALKSTORE_CHILD_NS", &schema)
                .env("ALKSTORE_CHILD_START", start_at.to_string())
                .env("ALKSTORE_PG_URL", &url)
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a worker process failed");
    }
    let took = started.elapsed();
    let log = std::fs::read_to_string(&file).unwrap();
    let _ = std::fs::remove_dir_all(&dir);

    let mut inside: HashMap<&str, Option<u64>> = HashMap::new();
    let mut last: HashMap<&str, u64> = HashMap::new();
    let mut sections = 0;
    let mut last_process: HashMap<&str, &str> = HashMap::new();
    let mut switches = 0;
    for line in log.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        let (name, what, token) = (parts[0], parts[1], parts[2].parse::<u64>().unwrap());
        let current = inside.entry(name).or_default();
        match what {
            "enter" => {
                assert_eq!(*current, None, "overlap on {name}: {line}");
                let previous = last.insert(name, token).unwrap_or(0);
                assert!(token > previous, "token went back on {name}: {line}");
                *current = Some(token);
                if last_process
                    .insert(name, parts[3])
                    .is_some_and(|p| p != parts[3])
                {
                    switches += 1;
                }
            }
            "exit" => {
                assert_eq!(*current, Some(token), "exit without its enter: {line}");
                *current = None;
                sections += 1;
            }
            _ => panic!("bad line {line}"),
        }
    }
    assert_eq!(sections, PROCESSES * CYCLES);
    eprintln!(
        "{sections} critical sections in 4 processes on 4 names in {took:?} (1.5 s of it \
         the start barrier); a name changed process {switches} times"
    );
    assert!(
        switches > 100,
        "the processes hardly met: {switches} hand-overs between them"
    );
}
