//! Memory follows the live state: after a burst of 100k waiters has come and gone, what the
//! kit keeps is back near what it kept before (counted by a global allocator of this test
//! binary's own).

mod model;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use alkstore_kit::Locks;
use futures_lite::future::poll_once;
use model::Model;

/// The system allocator, counting the bytes live.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const NAMES: usize = 1000;

/// Queues `n` waiters on the held names, then drops them all and lets the withdrawals run.
async fn burst(locks: &Locks<Model>, n: usize) -> usize {
    let mut waiters = Vec::with_capacity(n);
    for i in 0..n {
        let name = format!("job-{}", i % NAMES);
        let mut waiter = Box::pin(locks.acquire(&name, "w", Duration::from_secs(60)));
        assert!(poll_once(&mut waiter).await.is_none());
        waiters.push(waiter);
    }
    assert_eq!(locks.sleepers_for_test(), n);
    assert_eq!(locks.engine().live(), (NAMES, n));
    let peak = LIVE.load(Ordering::Relaxed);
    drop(waiters);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(locks.sleepers_for_test(), 0);
    assert_eq!(locks.engine().live(), (NAMES, 0));
    peak
}

/// Finding: the registry of sleepers kept the capacity of its largest burst for the store's
/// life (about 4 MB after 100k waiters, with none left); it now shrinks as they leave.
#[tokio::test(start_paused = true)]
async fn memory_follows_the_live_state_after_a_burst_of_100k_waiters() {
    let locks = model::store_with(Duration::from_secs(1), None).await;
    let mut holders = Vec::new();
    for i in 0..NAMES {
        let name = format!("job-{i}");
        let lock = locks.try_lock(&name, "h", Duration::from_secs(600));
        holders.push(lock.await.unwrap().unwrap());
    }
    // What a small burst leaves (the listener, the runtime's queues) is in the baseline.
    burst(&locks, 1000).await;
    let before = LIVE.load(Ordering::Relaxed);
    let peak = burst(&locks, 100_000).await;
    let after = LIVE.load(Ordering::Relaxed);
    let kept = after.saturating_sub(before);
    assert!(
        kept < 2 << 20,
        "{kept} bytes kept after the burst (before {before}, peak {peak}, after {after})"
    );
    drop(holders);
}
