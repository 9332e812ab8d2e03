//! Hostile review: heap after bursts of lapsed() watchers, force-released leases and timed-out waiters.
//!
//! Counters are per thread, so tests running in parallel do not disturb each other.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use alkstore_mem::{LockRegistry, ManualClock};

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

#[allow(dead_code)]
fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

fn live_bytes() -> i64 {
    LIVE_BYTES.with(Cell::get)
}

use alkstore_mem::Timestamp;
use std::future::Future;
use std::task::{Context, Waker};

const FLOOR: i64 = 64 * 1024;

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
