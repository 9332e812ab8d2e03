//! `make bench` (memory part): heap bytes per live lease, with a counting global allocator.
//!
//! Counts what the registry holds for N live leases beyond the name and owner bytes
//! themselves, at 1,000 and 1,000,000 leases, next to the hand-rolled lease map.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use alkstore_mem::{LockRegistry, ManualClock};
use alkstore_mem_bench::HandRolled;

struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to `System` unchanged; the counter only observes sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
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

fn measure(count: usize) -> (f64, f64) {
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

    let per = |total: f64| (total - text_bytes as f64) / count as f64;
    (per(ours), per(theirs))
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not: then stay quick.
    let full = std::env::args().any(|a| a == "--bench");
    let sizes: &[usize] = if full { &[1_000, 1_000_000] } else { &[1_000] };
    let mut out = String::new();
    out.push_str("| live leases | registry: heap bytes per lease beyond name + owner | hand-rolled map | target |\n");
    out.push_str("| ---: | ---: | ---: | --- |\n");
    for &count in sizes {
        let (ours, theirs) = measure(count);
        let verdict = if ours <= 96.0 { "met" } else { "MISSED" };
        out.push_str(&format!(
            "| {count} | {ours:.1} | {theirs:.1} | <= 96: {verdict} |\n"
        ));
    }
    println!("\nalkstore-mem memory report (counting allocator, requested bytes)\n{out}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("bench-memory.md"), out);
}
