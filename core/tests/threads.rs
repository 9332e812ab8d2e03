//! Rule 12: the registry under real threads.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use alkstore_mem::{LockRegistry, ManualClock};

#[test]
fn eight_threads_racing_over_2000_names_get_one_winner_per_name_and_unique_tokens() {
    const THREADS: usize = 8;
    const NAMES: usize = 2_000;
    let registry = LockRegistry::new(ManualClock::new()); // frozen: nothing lapses
    let barrier = Arc::new(Barrier::new(THREADS));
    let names: Arc<Vec<String>> = Arc::new(
        (0..NAMES)
            .map(|i| format!("tenant-{}/job/{i:06}", i % 7))
            .collect(),
    );

    let winners: Vec<Vec<(usize, u64)>> = thread::scope(|s| {
        let joins: Vec<_> = (0..THREADS)
            .map(|t| {
                let (registry, barrier, names) = (registry.clone(), barrier.clone(), names.clone());
                s.spawn(move || {
                    let owner = format!("thread-{t}");
                    let mut won = Vec::new();
                    barrier.wait();
                    // Each thread walks the names from a different starting point.
                    for k in 0..NAMES {
                        let i = (k + t * NAMES / THREADS) % NAMES;
                        if let Some(lock) = registry
                            .try_lock(&names[i], &owner, Duration::from_secs(60))
                            .unwrap()
                        {
                            won.push((i, lock.token()));
                            lock.detach();
                        }
                    }
                    won
                })
            })
            .collect();
        joins.into_iter().map(|j| j.join().unwrap()).collect()
    });

    let all: Vec<(usize, u64)> = winners.into_iter().flatten().collect();
    assert_eq!(all.len(), NAMES, "exactly one winner per name");
    let names_won: HashSet<usize> = all.iter().map(|w| w.0).collect();
    assert_eq!(names_won.len(), NAMES);
    let tokens: HashSet<u64> = all.iter().map(|w| w.1).collect();
    assert_eq!(tokens.len(), NAMES, "tokens are unique");
    assert_eq!(tokens.iter().max(), Some(&(NAMES as u64)));
}

#[test]
fn four_threads_churning_one_name_never_overlap() {
    const THREADS: usize = 4;
    const ROUNDS: usize = 20_000;
    let registry = LockRegistry::new(ManualClock::new());
    let inside = AtomicUsize::new(0);
    let entries = AtomicUsize::new(0);
    let barrier = Barrier::new(THREADS);

    thread::scope(|s| {
        for t in 0..THREADS {
            let (registry, inside, entries, barrier) =
                (registry.clone(), &inside, &entries, &barrier);
            s.spawn(move || {
                let owner = format!("t{t}");
                barrier.wait();
                for _ in 0..ROUNDS {
                    if let Some(lock) = registry
                        .try_lock("the-one", &owner, Duration::from_secs(60))
                        .unwrap()
                    {
                        assert_eq!(
                            inside.fetch_add(1, Ordering::SeqCst),
                            0,
                            "two holders inside at once"
                        );
                        entries.fetch_add(1, Ordering::Relaxed);
                        std::hint::spin_loop();
                        inside.fetch_sub(1, Ordering::SeqCst);
                        assert!(lock.release());
                    }
                }
            });
        }
    });
    assert!(entries.load(Ordering::Relaxed) > 0);
    assert!(registry.holder("the-one").is_none());
}

#[test]
fn registries_handles_and_waiting_futures_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send + 'static>() {}
    send_sync::<LockRegistry<ManualClock>>();
    send::<alkstore_mem::Lock<ManualClock>>();
    send::<alkstore_mem::Acquire<ManualClock>>();
    send_sync::<alkstore_mem::LeaseInfo>();
    send_sync::<alkstore_mem::LockError>();

    // A lock taken on one thread is released on another, and the name is free again.
    let registry = LockRegistry::new(ManualClock::new());
    let lock = registry
        .try_lock("moves", "a", Duration::from_secs(1))
        .unwrap()
        .unwrap();
    let released = thread::spawn(move || lock.release()).join().unwrap();
    assert!(released);
    assert!(registry.holder("moves").is_none());
}
