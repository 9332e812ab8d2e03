//! Several OS processes on one file: mutual exclusion and token order under contention, the
//! cross-process wake-up latency and the CPU cost of waiting. (The faults are in `kill9.rs`;
//! the children's roles in `common/procs.rs`.)

mod common;

use std::time::{Duration, Instant};

use common::procs::{Proc, config, wall_ns};
use common::{Scratch, runtime};

/// The children's side: see `common/procs.rs`.
#[test]
fn child() {
    common::procs::child();
}

#[test]
fn four_processes_200_cycles_on_4_names_never_overlap_and_tokens_follow_the_log() {
    let dir = Scratch::new();
    let rounds = 200;
    let started = Instant::now();
    let (_, log, procs) = logging_children(&dir, "cycles", 4, rounds);
    for p in procs {
        p.wait_ok();
    }
    let took = started.elapsed();
    let enters = check_log(&std::fs::read_to_string(&log).unwrap());
    assert_eq!(enters, 4 * rounds);
    eprintln!(
        "4 processes x {rounds} cycles: {enters} leases in {took:?} ({:.0} µs per lease)",
        took.as_micros() as f64 / enters as f64
    );
}

/// The file `locks.db` in `dir`, its tables made, and `count` children in `role`, each given
/// its id, the shared log (`log` in `dir`, empty) and `rounds`: the file, the log, the children.
fn logging_children(
    dir: &Scratch,
    role: &str,
    count: usize,
    rounds: usize,
) -> (std::path::PathBuf, std::path::PathBuf, Vec<Proc>) {
    let path = dir.file("locks.db");
    let log = dir.file("log");
    std::fs::write(&log, "").unwrap();
    runtime().block_on(async {
        drop(alkstore_sqlite::open(&path).await.unwrap());
    });
    let procs = (0..count)
        .map(|id| Proc::spawn(role, &path, &format!("{id},{},{rounds}", log.display())))
        .collect();
    (path, log, procs)
}

/// Checks a log of `enter`/`exit` lines: no overlap on a name, tokens strictly growing per
/// name and unique; the number of leases.
fn check_log(text: &str) -> usize {
    let mut inside: std::collections::HashMap<&str, (u64, &str)> = Default::default();
    let mut last: std::collections::HashMap<&str, u64> = Default::default();
    let mut all = std::collections::HashSet::new();
    let mut enters = 0;
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let (kind, name, token, who) = (f[0], f[1], f[2].parse::<u64>().unwrap(), f[3]);
        match kind {
            "enter" => {
                assert!(!inside.contains_key(name), "overlap on {name}: {line}");
                let prev = last.get(name).copied().unwrap_or(0);
                assert!(token > prev, "token {token} after {prev} on {name}");
                assert!(all.insert(token), "token {token} handed out twice");
                last.insert(name, token);
                inside.insert(name, (token, who));
                enters += 1;
            }
            "exit" => assert_eq!(inside.remove(name), Some((token, who)), "{line}"),
            _ => panic!("{line}"),
        }
    }
    assert!(inside.is_empty());
    enters
}

/// Three processes granting one name by `try_lock` only (the grant that writes the lease
/// row and the state row in one statement), while the clock steps back under them: never
/// two holders, tokens strictly growing, the clock floor never going back.
#[test]
fn three_processes_try_locking_one_name_never_overlap_while_the_clock_steps_back() {
    let dir = Scratch::new();
    let rounds = 150;
    let (path, log, procs) = logging_children(&dir, "try_cycles", 3, rounds);
    let conn = common::raw(&path);
    let floor = |conn: &rusqlite::Connection| -> i64 {
        conn.query_row(
            "SELECT deadline FROM alkstore_leases WHERE name = ''",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    let mut last = floor(&conn);
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(30));
        conn.execute_batch("UPDATE alkstore_test_clock SET offset_us = offset_us - 5000000")
            .unwrap();
        let now = floor(&conn);
        assert!(now >= last, "the floor went back: {now} after {last}");
        last = now;
    }
    for p in procs {
        p.wait_ok();
    }
    let enters = check_log(&std::fs::read_to_string(&log).unwrap());
    assert_eq!(enters, 3 * rounds);
    assert!(floor(&conn) >= last);
}

#[test]
fn a_release_reaches_a_waiter_in_another_process_in_about_a_millisecond() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    let rounds = 30;
    runtime().block_on(async {
        let locks = alkstore_sqlite::open_with(&path, config()).await.unwrap();
        let mut child = Proc::spawn("latency", &path, &rounds.to_string());
        let mut latencies = Vec::new();
        for _ in 0..rounds {
            let lock = locks
                .try_lock("lat", "parent", Duration::from_secs(30))
                .await
                .unwrap()
                .expect("the child released and waits for the next round");
            child.go();
            // The child is queued.
            while locks.snapshot().await.unwrap().waiting.is_empty() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            let sent = wall_ns();
            assert!(lock.release().await.unwrap());
            let got: u64 = child.next().split(' ').nth(1).unwrap().parse().unwrap();
            latencies.push(Duration::from_nanos(got.saturating_sub(sent)));
            assert_eq!(child.next(), "released");
        }
        child.wait_ok();
        latencies.sort();
        let median = latencies[latencies.len() / 2];
        eprintln!(
            "release -> waiter in another process: median {median:?}, min {:?}, max {:?} ({rounds} rounds)",
            latencies[0],
            latencies[latencies.len() - 1]
        );
        assert!(median < Duration::from_millis(100), "{median:?}");
    });
}

#[test]
fn a_process_waiting_idle_costs_under_a_few_percent_of_a_core() {
    let dir = Scratch::new();
    let path = dir.file("locks.db");
    let secs = std::env::var("ALKSTORE_SQLITE_IDLE_SECS").unwrap_or_else(|_| "5".into());
    runtime().block_on(async {
        let locks = alkstore_sqlite::open_with(&path, config()).await.unwrap();
        let _held = locks
            .try_lock("idle", "parent", Duration::from_secs(3600))
            .await
            .unwrap()
            .unwrap();
        let mut child = Proc::spawn("idle", &path, &secs);
        let cpu: f64 = child.next().split(' ').nth(1).unwrap().parse().unwrap();
        child.wait_ok();
        eprintln!("a process waiting {secs} s (heartbeat 100 ms): {cpu:.2}% of a core");
        assert!(cpu < 5.0, "{cpu}%");
    });
}
