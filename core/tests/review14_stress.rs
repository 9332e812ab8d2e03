//! Hostile review of 0.3 (issue 14): the in-memory engine at capacity under a real
//! multi-threaded runtime, with lost hand-offs, lapses, cancelled and bounded waits and
//! competing names. Every unbounded `acquire` must resolve (a stranded waiter is the defect
//! issue 14 fixed). Run with `cargo test -p alkstore-mem --release --test review14_stress`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use alkstore_mem::{Clock, Config, LockError, LockRegistry, Timer, Timestamp};
use tokio::time::{Instant, Sleep};

#[derive(Clone, Copy, Debug)]
struct Tokio(Instant);

impl Clock for Tokio {
    fn now(&self) -> Timestamp {
        Timestamp::from_nanos(u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
}

impl Timer for Tokio {
    type Sleep = Sleep;
    fn sleep_until(&self, deadline: Timestamp) -> Sleep {
        tokio::time::sleep_until(self.0 + deadline.as_duration())
    }
}

/// A small xorshift, so that each task's choices are reproducible from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn every_unbounded_acquire_resolves_at_capacity_under_a_real_runtime() {
    let granted = Arc::new(AtomicU64::new(0));
    let registry =
        LockRegistry::with_config(Tokio(Instant::now()), Config::new().with_max_locks(1));
    // Four OS threads, each a runtime of its own with four tasks, all on one registry.
    let threads: Vec<_> = (0..4u64)
        .map(|thread| {
            let registry = registry.clone();
            let granted = Arc::clone(&granted);
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                    .unwrap();
                runtime.block_on(async move {
                    let mut tasks = Vec::new();
                    for t in thread * 4..thread * 4 + 4 {
                        tasks.push(tokio::spawn(worker(
                            registry.clone(),
                            Arc::clone(&granted),
                            t,
                        )));
                    }
                    for task in tasks {
                        task.await.unwrap();
                    }
                });
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(registry.waiters(), 0, "no waiter left behind");
    eprintln!("grants: {}", granted.load(Ordering::Relaxed));
}

async fn worker(registry: LockRegistry<Tokio>, granted: Arc<AtomicU64>, t: u64) {
    let names = ["a", "b", "c", "d"];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t + 1).wrapping_mul(0x1000_0001));
    for _ in 0..300 {
        let name = names[rng.next(4) as usize];
        let ttl = Duration::from_micros(200 + rng.next(3_000));
        let owner = format!("t{t}");
        let got = match rng.next(5) {
            0 => registry.try_lock(name, &owner, ttl),
            1 => {
                let wait = Duration::from_micros(rng.next(2_000));
                registry.acquire(name, &owner, ttl).timeout(wait).await
            }
            2 => {
                // Cancelled mid-wait (it may have been handed the lease).
                let wait = registry.acquire(name, &owner, ttl);
                let give_up = Duration::from_micros(rng.next(1_500));
                tokio::select! {
                    got = wait => got,
                    () = tokio::time::sleep(give_up) => Ok(None),
                }
            }
            _ => {
                // Unbounded: must resolve.
                let wait = registry.acquire(name, &owner, ttl);
                match tokio::time::timeout(Duration::from_secs(20), wait).await {
                    Ok(got) => got,
                    Err(_) => panic!(
                        "task {t}: an unbounded acquire of {name:?} never resolved; \
                         snapshot {:?}",
                        registry.snapshot()
                    ),
                }
            }
        };
        match got {
            Ok(Some(lock)) => {
                granted.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_micros(rng.next(1_000))).await;
                match rng.next(3) {
                    0 => drop(lock),
                    1 => lock.detach(), // lapses at its deadline
                    _ => {
                        let _ = lock.release();
                    }
                }
            }
            Ok(None) => {}
            Err(LockError::CapacityExceeded { .. }) => {
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
            Err(other) => panic!("task {t}: {other}"),
        }
        // Sometimes a waiter that is polled once, then not collected for a while.
        if rng.next(10) == 0 {
            let mut late = Box::pin(registry.acquire(name, &owner, ttl));
            if let Some(got) = futures_lite::future::poll_once(&mut late).await {
                drop(got);
                continue;
            }
            tokio::time::sleep(Duration::from_micros(rng.next(5_000))).await;
            match tokio::time::timeout(Duration::from_secs(20), late).await {
                Ok(Ok(Some(lock))) => {
                    granted.fetch_add(1, Ordering::Relaxed);
                    drop(lock);
                }
                Ok(_) => {}
                Err(_) => panic!("task {t}: a late-collected acquire never resolved"),
            }
        }
    }
}
