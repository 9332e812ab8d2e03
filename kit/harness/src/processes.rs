//! Several OS processes on one server: 4 processes x 200 acquire/release cycles on 4 names,
//! each critical section appending `enter`/`exit` lines with its token to one shared file.
//! No two critical sections of a name overlap, and a name's tokens increase in file order.
//! The children are the test binary itself, run with `ALKSTORE_CHILD=worker` (see [`child`]).

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use alkstore_kit::CommonConfig;

use crate::fixture::Fixture;
use crate::support::{child_env, child_role, fresh_scope, spawn_child, store_at};

const PROCESSES: usize = 4;
const CYCLES: usize = 200;
const NAMES: usize = 4;

/// The children's entry point: nothing in a normal run; with `ALKSTORE_CHILD=worker` it is
/// one worker process of [`four_processes_never_overlap_and_tokens_increase_in_file_order`].
pub fn child<F: Fixture>(f: &F) {
    let Some(role) = child_role() else { return };
    assert_eq!(role, "worker");
    let file = child_env("ALKSTORE_CHILD_FILE");
    let me: usize = child_env("ALKSTORE_CHILD_INDEX").parse().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (url, scope) = (
            child_env("ALKSTORE_CHILD_URL"),
            child_env("ALKSTORE_CHILD_SCOPE"),
        );
        let locks = store_at(f, &url, &scope, CommonConfig::new()).await;
        // Start together, so that the processes contend from the first cycle.
        let start: u64 = child_env("ALKSTORE_CHILD_START").parse().unwrap();
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

/// Four processes on four names never overlap, and tokens increase in file order.
pub fn four_processes_never_overlap_and_tokens_increase_in_file_order<F: Fixture>(f: &F) {
    let url = f.url();
    let dir = std::env::temp_dir().join(format!("alkstore-mp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sections.log");
    std::fs::File::create(&file).unwrap();
    let scope = fresh_scope();
    let started = std::time::Instant::now();
    let start_at = std::time::UNIX_EPOCH.elapsed().unwrap().as_millis() + 1500;
    let children: Vec<_> = (0..PROCESSES)
        .map(|i| {
            let env = [
                ("ALKSTORE_CHILD_FILE", file.display().to_string()),
                ("ALKSTORE_CHILD_INDEX", i.to_string()),
                ("ALKSTORE_CHILD_SCOPE", scope.clone()),
                ("ALKSTORE_CHILD_START", start_at.to_string()),
                ("ALKSTORE_CHILD_URL", url.clone()),
            ];
            spawn_child("worker", &env)
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
    let mut last_process: HashMap<&str, &str> = HashMap::new();
    let (mut sections, mut switches) = (0, 0);
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
                let before = last_process.insert(name, parts[3]);
                if before.is_some_and(|p| p != parts[3]) {
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
        "{sections} critical sections in 4 processes on 4 names in {took:?} (1.5 s of it the \
         start barrier); a name changed process {switches} times"
    );
    assert!(
        switches > 100,
        "the processes hardly met: {switches} hand-overs"
    );
}
