//! Hostile review: tokio workers racing acquire/timeout/with_lock/force_release on a few
//! names; exclusion counted inside the critical section (while the lease is held and no
//! force_release runs), tokens strictly increasing per name and unique.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alkstore_mem_tokio::{LockOptions, LockRegistry, TokioClock, with_lock};

const NAMES: [&str; 4] = ["a", "b", "c", "d"];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tokio_workers_racing_acquire_and_with_lock_never_share_a_name() {
    let registry = LockRegistry::new(TokioClock::new());
    let inside: Arc<Vec<AtomicUsize>> = Arc::new((0..4).map(|_| AtomicUsize::new(0)).collect());
    let last: Arc<Vec<Mutex<u64>>> = Arc::new((0..4).map(|_| Mutex::new(0)).collect());
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for t in 0..64u64 {
        let (registry, inside, last, tokens) = (
            registry.clone(),
            inside.clone(),
            last.clone(),
            tokens.clone(),
        );
        tasks.push(tokio::spawn(async move {
            for k in 0..300u64 {
                let i = ((t * 31 + k * 7) % 4) as usize;
                let ttl = Duration::from_secs(30);
                let enter = |token: u64| {
                    assert_eq!(inside[i].fetch_add(1, Ordering::SeqCst), 0, "two holders");
                    let mut l = last[i].lock().unwrap();
                    assert!(token > *l, "token went back");
                    *l = token;
                    tokens.lock().unwrap().push(token);
                };
                if k % 3 == 0 {
                    let r = with_lock(
                        &registry,
                        NAMES[i],
                        "w",
                        LockOptions::ttl(ttl)
                            .wait(Duration::from_millis(2))
                            .keep_alive(Duration::ZERO),
                        |lease| {
                            enter(lease.token());
                            let inside = inside.clone();
                            async move {
                                tokio::task::yield_now().await;
                                inside[i].fetch_sub(1, Ordering::SeqCst);
                            }
                        },
                    )
                    .await
                    .unwrap();
                    let _ = r;
                } else {
                    let wait = Duration::from_micros(k % 5 * 500);
                    if let Some(lock) = registry
                        .acquire(NAMES[i], "w", ttl)
                        .timeout(wait)
                        .await
                        .unwrap()
                    {
                        enter(lock.token());
                        tokio::task::yield_now().await;
                        assert!(lock.is_held());
                        inside[i].fetch_sub(1, Ordering::SeqCst);
                        drop(lock);
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let tokens = tokens.lock().unwrap();
    let unique: HashSet<_> = tokens.iter().collect();
    assert_eq!(unique.len(), tokens.len());
    assert_eq!(registry.waiters(), 0);
    assert!(registry.snapshot().held.is_empty());
    eprintln!("grants: {}", tokens.len());
}
