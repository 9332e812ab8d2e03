//! `make bench`: alkstore-mem against the floor, a hand-rolled lease map and a DashMap lease
//! map, in one run. The same file is built twice: in the workspace (thin LTO, one codegen
//! unit) and in `bench/downstream` (no LTO, the core reached as a user's crate reaches it).
//!
//! Every benchmark goes through criterion (`iter_custom`); each sample's ns/op is also kept
//! here, and the report at the end gives medians and ratios between benchmarks measured in
//! this same run, next to the targets. Absolute numbers vary by machine; ratios travel.
//! Threaded benchmarks run a fixed number of operations per thread (criterion's iteration
//! count split between the threads, all started together under `std::thread::scope`) and
//! report wall-clock ns per operation over all threads: the inverse of throughput.

#[path = "../src/baselines.rs"]
mod baselines;
#[path = "common/report.rs"]
mod report;
#[path = "speed/samples.rs"]
mod samples;
#[path = "speed/summary.rs"]
mod summary;

use std::hint::black_box;
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use alkstore_mem::{Clock, LockRegistry, ManualClock};
use alkstore_mem_tokio::TokioClock;
use baselines::{DashLeases, Floor, HandRolled, StdFloor, job_names};
use criterion::{BenchmarkId, Criterion};
use samples::{record, timed};

const NAMES: usize = 4_096;
const TTL: Duration = Duration::from_secs(30);

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

    let std_floor = StdFloor::default();
    group.bench_function("floor with std::sync::Mutex", |b| {
        b.iter_custom(|iters| {
            timed("floor/std", iters, |i| {
                let name = &names[i % NAMES];
                assert!(std_floor.insert(name));
                assert!(std_floor.remove(name));
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

    group.bench_function("registry, ManualClock, released by drop", |b| {
        b.iter_custom(|iters| {
            timed("registry/drop", iters, |i| {
                let lock = manual
                    .try_lock(&names[i % NAMES], "worker-1", TTL)
                    .unwrap()
                    .unwrap();
                black_box(lock.token());
                drop(lock);
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

    let dash = DashLeases::default();
    group.bench_function("DashMap lease map", |b| {
        b.iter_custom(|iters| {
            timed("dashmap", iters, |i| {
                let name = &names[i % NAMES];
                let token = dash.try_lock(name, "worker-1", TTL).unwrap();
                assert!(dash.release(name, token));
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

/// `threads` threads, started together, each doing `iters / threads` (rounded up) calls of
/// `op(thread, i)`. Records and returns the wall time, as ns per operation over all threads.
fn in_threads(id: &str, threads: usize, iters: u64, op: impl Fn(usize, usize) + Sync) -> Duration {
    let barrier = Barrier::new(threads + 1);
    let per_thread = (iters as usize).div_ceil(threads);
    let elapsed = thread::scope(|s| {
        for t in 0..threads {
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
    });
    record(id, (per_thread * threads) as u64, elapsed);
    elapsed
}

/// A lease map under test in the threaded benchmarks: take `name` if free, then give it back.
trait Cycle: Sync {
    /// One try_lock, and a release when it was granted.
    fn cycle(&self, name: &str);
}

impl<C: Clock + Send + Sync> Cycle for LockRegistry<C> {
    fn cycle(&self, name: &str) {
        if let Some(lock) = self.try_lock(name, "worker", TTL).unwrap() {
            black_box(lock.token());
            lock.release();
        }
    }
}

impl Cycle for Floor {
    fn cycle(&self, name: &str) {
        if self.insert(name) {
            self.remove(name);
        }
    }
}

impl Cycle for StdFloor {
    fn cycle(&self, name: &str) {
        if self.insert(name) {
            self.remove(name);
        }
    }
}

impl Cycle for HandRolled {
    fn cycle(&self, name: &str) {
        if let Some(token) = self.try_lock(name, "worker", TTL) {
            self.release(name, token);
        }
    }
}

impl Cycle for DashLeases {
    fn cycle(&self, name: &str) {
        if let Some(token) = self.try_lock(name, "worker", TTL) {
            self.release(name, token);
        }
    }
}

/// The maps in the threaded benchmarks: (id, label, map).
fn contenders() -> Vec<(&'static str, &'static str, Box<dyn Cycle>)> {
    vec![
        (
            "registry",
            "registry, ManualClock",
            Box::new(LockRegistry::new(ManualClock::new())),
        ),
        (
            "floor",
            "floor: hashbrown + spin::Mutex",
            Box::new(Floor::default()),
        ),
        (
            "floor-std",
            "floor: hashbrown + std::sync::Mutex",
            Box::new(StdFloor::default()),
        ),
        (
            "hand-rolled",
            "hand-rolled Mutex<HashMap>",
            Box::new(HandRolled::default()),
        ),
        (
            "dashmap",
            "DashMap lease map",
            Box::new(DashLeases::default()),
        ),
    ]
}

/// 1 thread against 2 on disjoint names (each thread its own 2,048 of the 4,096): does a
/// second core add throughput?
fn disjoint(c: &mut Criterion) {
    let names = job_names(NAMES);
    let half = NAMES / 2;
    let mut group = c.benchmark_group("disjoint names: 1 thread vs 2");
    for (id, label, map) in contenders() {
        for threads in [1, 2] {
            let key = format!("disjoint/{id}/{threads}");
            group.bench_function(format!("{label}, {threads} thread(s)"), |b| {
                b.iter_custom(|iters| {
                    in_threads(&key, threads, iters, |t, i| {
                        map.cycle(&names[t * half + i % half]);
                    })
                })
            });
        }
    }
    group.finish();
}

/// 4 threads on this 2-core machine, all on the same 64 names: contention and preemption of
/// lock holders (where a spin lock's waiters burn their time slices).
fn shared(c: &mut Criterion) {
    let names = job_names(64);
    let mut group = c.benchmark_group("4 threads, 64 shared names");
    for (id, label, map) in contenders() {
        let key = format!("shared4/{id}");
        group.bench_function(label, |b| {
            b.iter_custom(|iters| {
                in_threads(&key, 4, iters, |t, i| {
                    map.cycle(&names[(i * 7 + t * 16) % 64]);
                })
            })
        });
    }
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

/// Cancelling a queued `acquire` (dropping its future) in a queue of 2,000 and of 32,000
/// waiters on one name: O(1) keeps the two costs close; O(queue length) would be 16x.
fn cancel(c: &mut Criterion) {
    let mut group = c.benchmark_group("cancel a waiter, newest first, queue of N on one name");
    for n in [2_000usize, 32_000] {
        let id = format!("cancel/{n}");
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut left = iters as usize;
                while left > 0 {
                    let registry = LockRegistry::new(ManualClock::new());
                    let _holder = registry.try_lock("hot", "a", TTL).unwrap().unwrap();
                    let mut waiting: Vec<_> = (0..n)
                        .map(|_| Box::pin(registry.acquire("hot", "w", TTL)))
                        .collect();
                    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                    for future in &mut waiting {
                        assert!(future.as_mut().poll(&mut cx).is_pending());
                    }
                    let batch = left.min(n);
                    let start = Instant::now();
                    for _ in 0..batch {
                        drop(waiting.pop());
                    }
                    total += start.elapsed();
                    left -= batch;
                }
                record(&id, iters, total);
                total
            })
        });
    }
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
        .configure_from_args();
    uncontended(&mut criterion);
    held_paths(&mut criterion);
    disjoint(&mut criterion);
    shared(&mut criterion);
    scale(&mut criterion);
    cancel(&mut criterion);
    criterion.final_summary();
    let contenders: Vec<_> = contenders()
        .into_iter()
        .map(|(id, label, _)| (id, label))
        .collect();
    summary::report(&contenders);
}
