//! Runs one hot path N times, for instruction counting under callgrind, where numbers are
//! repeatable on a noisy machine (`scripts/instructions.sh` runs it twice and takes the
//! difference, so setup cancels out). Built in the workspace (thin LTO) and in
//! bench/downstream (no LTO); the baselines are compiled into this crate in both.
//!
//! Usage: `hot_paths <path> <iterations>`, path one of: floor, cycle, busy, renew, holder,
//! is_held, hand-rolled, dashmap, floor-std.

#[path = "../src/baselines.rs"]
mod baselines;

use std::hint::black_box;
use std::time::Duration;

use alkstore_mem::{LockRegistry, ManualClock};
use baselines::{DashLeases, Floor, HandRolled, StdFloor, job_names};

const TTL: Duration = Duration::from_secs(30);

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "cycle".into());
    let n: usize = args.next().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let names = job_names(4_096);
    let name = |i: usize| names[i % names.len()].as_str();

    let registry = LockRegistry::new(ManualClock::new());
    match path.as_str() {
        "floor" => {
            let floor = Floor::default();
            for i in 0..n {
                assert!(floor.insert(name(i)));
                assert!(floor.remove(name(i)));
            }
        }
        "floor-std" => {
            let floor = StdFloor::default();
            for i in 0..n {
                assert!(floor.insert(name(i)));
                assert!(floor.remove(name(i)));
            }
        }
        "dashmap" => {
            let dash = DashLeases::default();
            for i in 0..n {
                let token = dash.try_lock(name(i), "worker-1", TTL).unwrap();
                assert!(dash.release(name(i), token));
            }
        }
        "hand-rolled" => {
            let hand = HandRolled::default();
            for i in 0..n {
                let token = hand.try_lock(name(i), "worker-1", TTL).unwrap();
                assert!(hand.release(name(i), token));
            }
        }
        "cycle" => {
            for i in 0..n {
                let lock = registry
                    .try_lock(name(i), "worker-1", TTL)
                    .unwrap()
                    .unwrap();
                black_box(lock.token());
                assert!(lock.release());
            }
        }
        held => {
            let mut locks: Vec<_> = names
                .iter()
                .map(|n| registry.try_lock(n, "holder", TTL).unwrap().unwrap())
                .collect();
            for i in 0..n {
                match held {
                    "busy" => assert!(registry.try_lock(name(i), "other", TTL).unwrap().is_none()),
                    "renew" => locks[i % names.len()].renew(TTL).unwrap(),
                    "holder" => {
                        black_box(registry.holder(name(i)).unwrap());
                    }
                    "is_held" => assert!(locks[i % names.len()].is_held()),
                    other => panic!("unknown path {other:?}"),
                }
            }
        }
    }
}
