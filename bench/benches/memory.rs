//! `make bench` (memory part), with a counting global allocator: heap bytes per live lease
//! beyond the name and owner bytes, at 1,000 and 1,000,000 leases, next to the hand-rolled
//! and DashMap lease maps; and heap allocations per operation on the hot paths (a busy
//! `try_lock` must make none).

#[path = "../src/baselines.rs"]
#[allow(dead_code)] // the floors are the speed benchmark's
mod baselines;
#[path = "common/report.rs"]
mod report;

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, AtomicU64, Ordering};
use std::time::Duration;

use alkstore_mem::{LockRegistry, ManualClock};
use baselines::{DashLeases, HandRolled, job_names};
use report::Row;

struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded to `System` unchanged; the counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const TTL: Duration = Duration::from_secs(3_600);

/// The names and owners of the leases: all built before measuring, so only the registry's
/// own allocations count.
fn workload(count: usize) -> (Vec<String>, Vec<String>, usize) {
    let names: Vec<String> = (0..count)
        .map(|i| format!("tenant-{}/job/{i:07}", i % 16))
        .collect();
    let owners: Vec<String> = (0..count).map(|i| format!("worker-{}", i % 8)).collect();
    let text_bytes = names.iter().chain(&owners).map(String::len).sum();
    (names, owners, text_bytes)
}

fn measure(count: usize) -> (f64, f64, f64) {
    let (names, owners, text_bytes) = workload(count);

    let before = LIVE_BYTES.load(Ordering::Relaxed);
    let registry = LockRegistry::new(ManualClock::new());
    for (name, owner) in names.iter().zip(&owners) {
        registry
            .try_lock(name, owner, TTL)
            .unwrap()
            .unwrap()
            .detach();
    }
    let ours = (LIVE_BYTES.load(Ordering::Relaxed) - before) as f64;
    drop(registry);

    let before = LIVE_BYTES.load(Ordering::Relaxed);
    let hand = HandRolled::default();
    for (name, owner) in names.iter().zip(&owners) {
        hand.try_lock(name, owner, TTL).unwrap();
    }
    let theirs = (LIVE_BYTES.load(Ordering::Relaxed) - before) as f64;
    drop(hand);

    let before = LIVE_BYTES.load(Ordering::Relaxed);
    let dash = DashLeases::default();
    for (name, owner) in names.iter().zip(&owners) {
        dash.try_lock(name, owner, TTL).unwrap();
    }
    let dash_bytes = (LIVE_BYTES.load(Ordering::Relaxed) - before) as f64;
    drop(dash);

    let per = |total: f64| (total - text_bytes as f64) / count as f64;
    (per(ours), per(theirs), per(dash_bytes))
}

/// Heap allocations per call of `op`, over `n` calls (after one call to warm up).
fn allocations_per_op(n: usize, mut op: impl FnMut(usize)) -> f64 {
    op(0);
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for i in 0..n {
        op(i);
    }
    (ALLOCATIONS.load(Ordering::Relaxed) - before) as f64 / n as f64
}

fn allocation_rows() -> Vec<Row> {
    const N: usize = 100_000;
    let names = job_names(4_096);
    let name = |i: usize| names[i % names.len()].as_str();
    let unit = "allocs/op";
    let mut rows = Vec::new();

    let registry = LockRegistry::new(ManualClock::new());
    let cycle = allocations_per_op(N, |i| {
        let lock = registry
            .try_lock(name(i), "worker-1", TTL)
            .unwrap()
            .unwrap();
        assert!(lock.release());
    });
    rows.push(Row::new(
        "allocs/cycle",
        "allocations: try_lock + release",
        cycle,
        unit,
    ));
    let hand = HandRolled::default();
    let hand_cycle = allocations_per_op(N, |i| {
        let token = hand.try_lock(name(i), "worker-1", TTL).unwrap();
        assert!(hand.release(name(i), token));
    });
    rows.push(Row::new(
        "allocs/hand-rolled",
        "allocations: hand-rolled try_lock + release",
        hand_cycle,
        unit,
    ));
    let dash = DashLeases::default();
    let dash_cycle = allocations_per_op(N, |i| {
        let token = dash.try_lock(name(i), "worker-1", TTL).unwrap();
        assert!(dash.release(name(i), token));
    });
    rows.push(Row::new(
        "allocs/dashmap",
        "allocations: DashMap try_lock + release",
        dash_cycle,
        unit,
    ));

    let mut locks: Vec<_> = names
        .iter()
        .map(|n| registry.try_lock(n, "holder", TTL).unwrap().unwrap())
        .collect();
    let busy = allocations_per_op(N, |i| {
        assert!(registry.try_lock(name(i), "other", TTL).unwrap().is_none());
    });
    rows.push(
        Row::new("allocs/busy", "allocations: busy try_lock", busy, unit).target("0", busy == 0.0),
    );
    let renew = allocations_per_op(N, |i| locks[i % names.len()].renew(TTL).unwrap());
    rows.push(Row::new("allocs/renew", "allocations: renew", renew, unit));
    let is_held = allocations_per_op(N, |i| assert!(locks[i % names.len()].is_held()));
    rows.push(Row::new(
        "allocs/is_held",
        "allocations: is_held",
        is_held,
        unit,
    ));
    let holder = allocations_per_op(N, |i| {
        black_box(registry.holder(name(i)).unwrap());
    });
    rows.push(Row::new(
        "allocs/holder",
        "allocations: holder",
        holder,
        unit,
    ));
    rows
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not: then stay quick.
    let full = std::env::args().any(|a| a == "--bench");
    let sizes: &[usize] = if full { &[1_000, 1_000_000] } else { &[1_000] };
    let mut rows = Vec::new();
    for &count in sizes {
        let (ours, hand, dash) = measure(count);
        let unit = "B/lease";
        rows.push(
            Row::new(
                &format!("heap/{count}"),
                &format!("heap per lease beyond name + owner, {count} live leases: registry"),
                ours,
                unit,
            )
            .target("<= 96 B", ours <= 96.0),
        );
        rows.push(
            Row::new(
                &format!("heap/{count}/hand-rolled"),
                &format!("heap per lease, {count} live leases: hand-rolled map"),
                hand,
                unit,
            )
            .ratio(format!("{:.2}x the registry's", hand / ours)),
        );
        rows.push(
            Row::new(
                &format!("heap/{count}/dashmap"),
                &format!("heap per lease, {count} live leases: DashMap lease map"),
                dash,
                unit,
            )
            .ratio(format!("{:.2}x the registry's", dash / ours)),
        );
    }
    rows.extend(allocation_rows());
    report::publish(
        "memory",
        "alkstore-mem memory (counting allocator, requested bytes and allocation calls)",
        &rows,
    );
}
