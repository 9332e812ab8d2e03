//! `make bench`: alkstore-mem against the floor and a hand-rolled lease map, in one run.
//!
//! Every benchmark goes through criterion (`iter_custom`); each sample's ns/op is also kept
//! here, and the report at the end gives medians and ratios between benchmarks measured in
//! this same run, next to the targets. Absolute numbers vary by machine; ratios travel.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::{Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use alkstore_mem::{Clock, LockRegistry, ManualClock};
use alkstore_mem_bench::{Floor, HandRolled, job_names};
use alkstore_mem_tokio::TokioClock;
use criterion::{BenchmarkId, Criterion};

const NAMES: usize = 4_096;
const TTL: Duration = Duration::from_secs(30);

/// ns/op of every sample, by benchmark id.
static SAMPLES: Mutex<BTreeMap<String, Vec<f64>>> = Mutex::new(BTreeMap::new());

/// Runs `iters` operations with `op(i)`, records ns/op under `id`, returns the elapsed time.
fn timed(id: &str, iters: u64, mut op: impl FnMut(usize)) -> Duration {
    let start = Instant::now();
    for i in 0..iters as usize {
        op(i);
    }
    let elapsed = start.elapsed();
    record(id, iters, elapsed);
    elapsed
}

fn record(id: &str, iters: u64, elapsed: Duration) {
    let ns = elapsed.as_nanos() as f64 / iters.max(1) as f64;
    SAMPLES
        .lock()
        .unwrap()
        .entry(id.to_owned())
        .or_default()
        .push(ns);
}

fn median(id: &str) -> Option<f64> {
    let samples = SAMPLES.lock().unwrap();
    let mut v = samples.get(id)?.clone();
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

fn registry_cycle<C: Clock>(registry: &LockRegistry<C>, names: &[String], i: usize) {
    let lock = registry
        .try_lock(&names[i % names.len()], "worker-1", TTL)
        .unwrap()
        .unwrap();
    black_box(lock.token());
    assert!(lock.release());
}

fn uncontended(c: &mut Criterion) {
    let names = job_names(NAMES);
    let mut group = c.benchmark_group("try_lock+release (4096 names)");

    let floor = Floor::default();
    group.bench_function("floor: hashbrown + spin insert/remove", |b| {
        b.iter_custom(|iters| {
            timed("floor", iters, |i| {
                let name = &names[i % NAMES];
                assert!(floor.insert(name));
                assert!(floor.remove(name));
            })
        })
    });

    let manual = LockRegistry::new(ManualClock::new());
    group.bench_function("registry, ManualClock", |b| {
        b.iter_custom(|iters| {
            timed("registry/manual", iters, |i| {
                registry_cycle(&manual, &names, i)
            })
        })
    });

    let tokio_registry = LockRegistry::new(TokioClock::new());
    group.bench_function("registry, TokioClock", |b| {
        b.iter_custom(|iters| {
            timed("registry/tokio", iters, |i| {
                registry_cycle(&tokio_registry, &names, i)
            })
        })
    });

    let hand = HandRolled::default();
    group.bench_function("hand-rolled Mutex<HashMap> lease map", |b| {
        b.iter_custom(|iters| {
            timed("hand-rolled", iters, |i| {
                let name = &names[i % NAMES];
                let token = hand.try_lock(name, "worker-1", TTL).unwrap();
                assert!(hand.release(name, token));
            })
        })
    });
    group.finish();
}

fn held_paths(c: &mut Criterion) {
    let names = job_names(NAMES);
    let registry = LockRegistry::new(ManualClock::new());
    let mut locks: Vec<_> = names
        .iter()
        .map(|n| registry.try_lock(n, "holder", TTL).unwrap().unwrap())
        .collect();
    let mut group = c.benchmark_group("held names (4096 live)");
    group.bench_function("busy try_lock", |b| {
        b.iter_custom(|iters| {
            timed("busy", iters, |i| {
                assert!(
                    registry
                        .try_lock(&names[i % NAMES], "other", TTL)
                        .unwrap()
                        .is_none()
                )
            })
        })
    });
    group.bench_function("renew", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for i in 0..iters as usize {
                locks[i % NAMES].renew(TTL).unwrap();
            }
            let elapsed = start.elapsed();
            record("renew", iters, elapsed);
            elapsed
        })
    });
    group.bench_function("holder", |b| {
        b.iter_custom(|iters| {
            timed("holder", iters, |i| {
                black_box(registry.holder(&names[i % NAMES]).unwrap());
            })
        })
    });
    group.bench_function("is_held", |b| {
        b.iter_custom(|iters| timed("is_held", iters, |i| assert!(locks[i % NAMES].is_held())))
    });
    group.finish();
}

/// Two threads, each doing `iters / 2` try_lock + release cycles over 64 shared names.
fn two_threads(iters: u64, op: impl Fn(usize, usize) + Sync) -> Duration {
    let barrier = Barrier::new(3);
    let per_thread = (iters as usize).div_ceil(2);
    thread::scope(|s| {
        for t in 0..2 {
            let (barrier, op) = (&barrier, &op);
            s.spawn(move || {
                barrier.wait();
                for i in 0..per_thread {
                    op(t, i);
                }
                barrier.wait();
            });
        }
        barrier.wait();
        let start = Instant::now();
        barrier.wait();
        start.elapsed()
    })
}

fn contention(c: &mut Criterion) {
    let names = job_names(64);
    let mut group = c.benchmark_group("contention (2 threads, 64 shared names)");
    let registry = LockRegistry::new(ManualClock::new());
    group.bench_function("registry, ManualClock", |b| {
        b.iter_custom(|iters| {
            let elapsed = two_threads(iters, |t, i| {
                let name = &names[(i * 7 + t * 32) % 64];
                if let Some(lock) = registry.try_lock(name, "w", TTL).unwrap() {
                    lock.release();
                }
            });
            record("contended/registry", iters, elapsed);
            elapsed
        })
    });
    let hand = HandRolled::default();
    group.bench_function("hand-rolled Mutex<HashMap> lease map", |b| {
        b.iter_custom(|iters| {
            let elapsed = two_threads(iters, |t, i| {
                let name = &names[(i * 7 + t * 32) % 64];
                if let Some(token) = hand.try_lock(name, "w", TTL) {
                    hand.release(name, token);
                }
            });
            record("contended/hand-rolled", iters, elapsed);
            elapsed
        })
    });
    group.finish();
}

fn scale(c: &mut Criterion) {
    let names = job_names(NAMES);
    let mut group = c.benchmark_group("scale: try_lock+release with N other live leases");
    for live in [1_000usize, 1_000_000] {
        let registry = LockRegistry::new(ManualClock::new());
        for i in 0..live {
            registry
                .try_lock(&format!("tenant-{}/lease/{i:07}", i % 16), "worker", TTL)
                .unwrap()
                .unwrap()
                .detach();
        }
        let id = format!("scale/{live}");
        group.bench_function(BenchmarkId::from_parameter(live), |b| {
            b.iter_custom(|iters| timed(&id, iters, |i| registry_cycle(&registry, &names, i)))
        });
    }
    group.finish();
}

fn report() {
    let m = |id: &str| median(id).unwrap_or(f64::NAN);
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    let floor = m("floor");
    let manual = m("registry/manual");
    let tokio = m("registry/tokio");
    let hand = m("hand-rolled");
    let busy = m("busy");
    let contended = m("contended/registry");
    let contended_hand = m("contended/hand-rolled");
    let (k1, m1) = (m("scale/1000"), m("scale/1000000"));

    let mut out = String::new();
    let mut line = |s: String| {
        println!("{s}");
        out.push_str(&s);
        out.push('\n');
    };
    line("".into());
    line("alkstore-mem benchmark report (median ns/op over criterion samples; ratios within this run)".into());
    line("| benchmark | ns/op | ratio | target |".into());
    line("| --- | ---: | ---: | --- |".into());
    line(format!(
        "| floor: hashbrown + spin insert/remove (4096 names) | {floor:.1} | 1.00x floor | |"
    ));
    line(format!(
        "| try_lock + release, ManualClock | {manual:.1} | {:.2}x floor | <= 1.5x floor: {} |",
        manual / floor,
        verdict(manual / floor <= 1.5)
    ));
    line(format!(
        "| try_lock + release, TokioClock | {tokio:.1} | {:.2}x floor | <= 1.5x floor: {} |",
        tokio / floor,
        verdict(tokio / floor <= 1.5)
    ));
    line(format!(
        "| hand-rolled Mutex<HashMap> lease map | {hand:.1} | registry {:.2}x faster | >= 2x: {} |",
        hand / manual,
        verdict(hand / manual >= 2.0)
    ));
    line(format!(
        "| busy try_lock | {busy:.1} | | < 20 ns: {} |",
        verdict(busy < 20.0)
    ));
    line(format!("| renew | {:.1} | | |", m("renew")));
    line(format!("| holder | {:.1} | | |", m("holder")));
    line(format!("| is_held | {:.1} | | |", m("is_held")));
    line(format!(
        "| contention, 2 threads x 64 names: registry | {contended:.1} | registry {:.2}x faster than hand-rolled | |",
        contended_hand / contended
    ));
    line(format!(
        "| contention, 2 threads x 64 names: hand-rolled | {contended_hand:.1} | | |"
    ));
    line(format!("| scale: 1,000 live leases | {k1:.1} | 1.00x | |"));
    line(format!(
        "| scale: 1,000,000 live leases | {m1:.1} | {:.2}x the 1k cost | <= 2x: {} |",
        m1 / k1,
        verdict(m1 / k1 <= 2.0)
    ));
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("bench-speed.md"), out);
}

fn main() {
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
        .configure_from_args();
    uncontended(&mut criterion);
    held_paths(&mut criterion);
    contention(&mut criterion);
    scale(&mut criterion);
    criterion.final_summary();
    report();
}
