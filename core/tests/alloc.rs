//! Rules 10 and 11, and memory after bursts (leases, waiters, `lapsed()` watchers), measured
//! with a counting global allocator.
//!
//! Counters are per thread, so tests running in parallel do not disturb each other.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::task::{Context, Waker};
use std::time::Duration;

use alkstore_mem::{LockRegistry, ManualClock, Timestamp};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    static LIVE_BYTES: Cell<i64> = const { Cell::new(0) };
}

fn note(allocs: u64, bytes: i64) {
    let _ = ALLOCATIONS.try_with(|a| a.set(a.get() + allocs));
    let _ = LIVE_BYTES.try_with(|b| b.set(b.get() + bytes));
}

// SAFETY: every call is forwarded to `System` unchanged; the counters only observe.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(1, layout.size() as i64);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(0, -(layout.size() as i64));
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(1, new_size as i64 - layout.size() as i64);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

fn live_bytes() -> i64 {
    LIVE_BYTES.with(Cell::get)
}

#[test]
fn busy_try_lock_renew_and_is_held_allocate_nothing() {
    let registry = LockRegistry::new(ManualClock::new());
    let mut lock = registry
        .try_lock("tenant-3/job/000123", "worker-1", Duration::from_secs(60))
        .unwrap()
        .unwrap();
    let before = allocations();
    for _ in 0..1_000 {
        assert!(
            registry
                .try_lock("tenant-3/job/000123", "worker-2", Duration::from_secs(60))
                .unwrap()
                .is_none()
        );
        lock.renew(Duration::from_secs(60)).unwrap();
        assert!(lock.is_held());
    }
    let made = allocations() - before;
    eprintln!("rule 11: 3,000 busy try_lock/renew/is_held calls made {made} heap allocations");
    assert_eq!(made, 0);
}

#[test]
fn detached_short_leases_on_distinct_names_leave_the_heap_where_it_started() {
    const LEASES: usize = 300_000;
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let mut name = String::with_capacity(32);
    let start = live_bytes();
    let mut peak = 0;
    for i in 0..LEASES {
        use std::fmt::Write;
        name.clear();
        write!(name, "tenant-{}/job/{i:07}", i % 13).unwrap();
        registry
            .try_lock(&name, "worker", Duration::from_micros(50))
            .unwrap()
            .expect("distinct name")
            .detach();
        clock.advance(Duration::from_micros(10));
        peak = peak.max(live_bytes() - start);
    }
    let growth = live_bytes() - start;
    eprintln!(
        "rule 10: {LEASES} detached 50 µs leases on distinct names: heap growth {growth} bytes at the end, peak {peak} bytes"
    );
    // Without reclaiming, this would hold ~300,000 entries (tens of MiB).
    assert!(growth < 64 * 1024, "heap grew by {growth} bytes");
    assert!(peak < 64 * 1024, "heap peaked {peak} bytes above the start");
}

/// The heap bytes a fresh registry needs for `n` live leases on names like the tests' own.
fn heap_of_fresh_registry_with(n: usize) -> i64 {
    let start = live_bytes();
    let registry = LockRegistry::new(ManualClock::new());
    let locks: Vec<_> = (0..n)
        .map(|i| {
            registry
                .try_lock(
                    &format!("tenant/job/{i:07}"),
                    "worker",
                    Duration::from_secs(60),
                )
                .unwrap()
                .unwrap()
        })
        .collect();
    let bytes = live_bytes() - start;
    drop(locks);
    bytes
}

/// Heap the registry may keep beyond what its live state needs: small and fixed.
const FLOOR: i64 = 64 * 1024;

#[test]
fn heap_follows_live_leases_after_a_burst_of_cancelled_waiters() {
    use std::future::Future;
    use std::task::{Context, Waker};
    const WAITERS: usize = 30_000;
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let holders: Vec<_> = (0..100)
        .map(|i| {
            registry
                .try_lock(&format!("hot/{i}"), "holder", Duration::from_secs(60))
                .unwrap()
                .unwrap()
        })
        .collect();
    let start = live_bytes();
    let mut waiting: Vec<_> = (0..WAITERS)
        .map(|i| {
            Box::pin(
                registry
                    .acquire(
                        &format!("hot/{}", i % 100),
                        "waiter",
                        Duration::from_secs(1),
                    )
                    .timeout(Duration::from_secs(30)),
            )
        })
        .collect();
    let mut cx = Context::from_waker(Waker::noop());
    for future in &mut waiting {
        assert!(future.as_mut().poll(&mut cx).is_pending());
    }
    let peak = live_bytes() - start;
    assert_eq!(registry.waiters(), WAITERS);
    assert_eq!(clock.pending_sleeps(), WAITERS);
    drop(waiting);
    let growth = live_bytes() - start;
    eprintln!(
        "{WAITERS} waiters on 100 names, all cancelled: heap {peak} bytes at the peak, {growth} bytes after"
    );
    assert_eq!(registry.waiters(), 0);
    assert!(growth < FLOOR, "kept {growth} bytes");
    drop(holders);
}

#[test]
fn heap_follows_live_leases_after_a_burst_of_lapsed_leases_and_reused_names() {
    const LEASES: usize = 100_000;
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let start = live_bytes();
    for i in 0..LEASES {
        registry
            .try_lock(
                &format!("burst/{i:07}"),
                "worker",
                Duration::from_millis(10),
            )
            .unwrap()
            .unwrap()
            .detach();
    }
    let peak = live_bytes() - start;
    clock.advance(Duration::from_secs(1)); // every lease lapses
    // Traffic on 100 reused names only: no new name is inserted.
    let names: Vec<String> = (0..100).map(|i| format!("burst/{i:07}")).collect();
    let mut live = Vec::new();
    // Enough traffic that every shard with one of the names at least (all of them, but for
    // a chance of about 1e-5) reaches its amortised sweep: nothing reclaims a shard that
    // sees no operation at all, since nothing runs in the background.
    for _ in 0..600 {
        live.clear(); // released on drop
        for name in &names {
            live.push(
                registry
                    .try_lock(name, "worker", Duration::from_secs(60))
                    .unwrap()
                    .unwrap(),
            );
            assert!(registry.holder(name).is_some());
        }
    }
    let growth = live_bytes() - start;
    let needed = heap_of_fresh_registry_with(names.len());
    eprintln!(
        "{LEASES} lapsed leases, then traffic on 100 names: heap {peak} bytes at the peak, {growth} bytes after (a fresh registry with 100 leases: {needed} bytes)"
    );
    assert!(growth < 2 * needed + FLOOR, "kept {growth} bytes");
    drop(live);
}

#[test]
fn heap_follows_live_leases_after_a_burst_of_released_leases() {
    const LEASES: usize = 100_000;
    const KEPT: usize = 1_000;
    let registry = LockRegistry::new(ManualClock::new());
    let start = live_bytes();
    let mut locks: Vec<_> = (0..LEASES)
        .map(|i| {
            registry
                .try_lock(
                    &format!("tenant/job/{i:07}"),
                    "worker",
                    Duration::from_secs(60),
                )
                .unwrap()
                .unwrap()
        })
        .collect();
    let peak = live_bytes() - start;
    let kept: Vec<_> = locks.drain(..KEPT).collect();
    drop(locks); // releases all the others
    let growth = live_bytes() - start;
    let needed = heap_of_fresh_registry_with(KEPT);
    eprintln!(
        "{LEASES} live leases, all but {KEPT} released: heap {peak} bytes at the peak, {growth} bytes after (a fresh registry with {KEPT} leases: {needed} bytes)"
    );
    assert!(growth < 2 * needed + FLOOR, "kept {growth} bytes");
    drop(kept);
    let growth = live_bytes() - start;
    assert!(growth < FLOOR, "kept {growth} bytes with no lease at all");
}

// From the hostile review: bursts of watchers, force-releases and timed-out waiters.

fn baseline() -> i64 {
    let start = live_bytes();
    let r = LockRegistry::new(ManualClock::new());
    let _ = r.try_lock("warm", "w", Duration::from_secs(1)).unwrap();
    let b = live_bytes() - start;
    drop(r);
    b
}

#[test]
fn heap_after_a_burst_of_lapsed_watchers_and_force_releases_returns_to_floor() {
    const N: usize = 200_000;
    let start = live_bytes();
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let mut cx = Context::from_waker(Waker::noop());
    let mut locks = Vec::with_capacity(N);
    for i in 0..N {
        locks.push(
            registry
                .try_lock(&format!("n/{i:07}"), "w", Duration::from_secs(60))
                .unwrap()
                .unwrap(),
        );
    }
    // Every lease watched by a pending lapsed() (registered), half dropped, half woken by force_release.
    for (i, lock) in locks.iter().enumerate() {
        let mut l = Box::pin(lock.lapsed());
        assert!(l.as_mut().poll(&mut cx).is_pending());
        if i % 2 == 0 {
            registry.force_release(lock.name()).unwrap();
            assert!(l.as_mut().poll(&mut cx).is_ready());
        }
    }
    let peak = live_bytes() - start;
    drop(locks);
    let after = live_bytes() - start;
    eprintln!(
        "peak {peak} B, after drain {after} B, fresh {} B",
        baseline()
    );
    assert!(after < baseline() + FLOOR, "heap after drain: {after} B");
    drop(registry);
}

#[test]
fn heap_after_a_burst_of_timed_out_waiters_returns_to_floor() {
    const N: usize = 200_000;
    let start = live_bytes();
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let mut cx = Context::from_waker(Waker::noop());
    let holders: Vec<_> = (0..64)
        .map(|i| {
            registry
                .try_lock(&format!("h{i}"), "w", Duration::from_secs(3600))
                .unwrap()
                .unwrap()
        })
        .collect();
    let mut waiting: Vec<_> = (0..N)
        .map(|i| {
            Box::pin(
                registry
                    .acquire(&format!("h{}", i % 64), "w", Duration::from_secs(1))
                    .timeout(Duration::from_secs(1)),
            )
        })
        .collect();
    for w in &mut waiting {
        assert!(w.as_mut().poll(&mut cx).is_pending());
    }
    assert_eq!(registry.waiters(), N);
    clock.set(Timestamp::from_millis(1_000));
    for w in &mut waiting {
        assert!(matches!(
            w.as_mut().poll(&mut cx),
            std::task::Poll::Ready(Ok(None))
        ));
    }
    let peak = live_bytes() - start;
    drop(waiting);
    assert_eq!(registry.waiters(), 0);
    drop(holders);
    let after = live_bytes() - start;
    eprintln!(
        "peak {peak} B, after drain {after} B, pending sleeps {}",
        clock.pending_sleeps()
    );
    assert!(after < baseline() + FLOOR, "heap after drain: {after} B");
}
