//! Hostile review: random operations against a model (incl. force_release, snapshot,
//! remaining, step-back), and threads racing (exclusion counted inside the critical section,
//! tokens strictly increasing per name and unique across the registry, force_release racing
//! renew/release/hand-offs).

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use alkstore_mem::{Clock, Lock, LockError, LockRegistry, ManualClock, Timestamp};
use futures_lite::future::block_on;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const NAMES: [&str; 6] = ["a", "b", "c", "job/17", "ü✓", "n5"];

#[derive(Clone, Copy)]
struct Model {
    token: u64,
    deadline: Timestamp,
}

fn ops() -> u64 {
    std::env::var("REVIEW_OPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300_000)
}

/// Random try_lock / renew / release / drop / detach / force_release / advance / step back /
/// holder / snapshot / remaining / is_held against a model of live leases.
#[test]
fn random_ops_with_force_release_snapshot_and_step_back_agree_with_model() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut model: BTreeMap<&str, Model> = BTreeMap::new();
    let mut handles: Vec<Lock<ManualClock>> = Vec::new();
    let mut now = Timestamp::ZERO; // the registry's clamped notion of now
    let mut last_token = 0;
    let n = ops();
    for _ in 0..n {
        let name = NAMES[rng.below(NAMES.len() as u64) as usize];
        let live = |m: &BTreeMap<&str, Model>, name: &str, now: Timestamp| {
            m.get(name)
                .filter(|l| l.deadline > now || l.deadline == Timestamp::MAX)
                .copied()
        };
        let op = rng.below(12);
        if !(5..=7).contains(&op) {
            // Every registry call below reads the clock once and the registry keeps it.
            now = now.max(clock.now());
        }
        match op {
            0 | 1 => {
                let ttl = Duration::from_millis(1 + rng.below(50));
                let got = registry.try_lock(name, "o", ttl).unwrap();
                match (live(&model, name, now), got) {
                    (Some(_), None) => {}
                    (None, Some(lock)) => {
                        assert!(lock.token() > last_token);
                        last_token = lock.token();
                        assert_eq!(lock.deadline(), now.saturating_add(ttl));
                        model.insert(
                            name,
                            Model {
                                token: lock.token(),
                                deadline: lock.deadline(),
                            },
                        );
                        handles.push(lock);
                    }
                    (m, g) => panic!(
                        "try_lock {name}: model {:?} got {:?}",
                        m.map(|m| m.token),
                        g
                    ),
                }
            }
            2 if !handles.is_empty() => {
                let i = rng.below(handles.len() as u64) as usize;
                let ttl = Duration::from_millis(1 + rng.below(50));
                let h = &mut handles[i];
                let expect_live = live(&model, h.name(), now).is_some_and(|m| m.token == h.token());
                let r = h.renew(ttl);
                assert_eq!(r.is_ok(), expect_live, "renew {:?}", r);
                if let Err(e) = r {
                    assert!(matches!(e, LockError::Expired { .. }));
                } else {
                    model.insert(
                        NAMES.iter().find(|n| **n == h.name()).unwrap(),
                        Model {
                            token: h.token(),
                            deadline: h.deadline(),
                        },
                    );
                }
            }
            3 if !handles.is_empty() => {
                let i = rng.below(handles.len() as u64) as usize;
                let h = handles.swap_remove(i);
                let name = *NAMES.iter().find(|n| **n == h.name()).unwrap();
                let expect_live = live(&model, name, now).is_some_and(|m| m.token == h.token());
                match rng.below(3) {
                    0 => assert_eq!(h.release(), expect_live),
                    1 => drop(h),
                    _ => {
                        h.detach();
                        let _ = registry.holder("a"); // so that this op reads the clock too
                        continue;
                    }
                }
                if expect_live {
                    model.remove(name);
                }
            }
            4 => {
                let ended = registry.force_release(name);
                let expected = live(&model, name, now);
                assert_eq!(ended.as_ref().map(|e| e.token()), expected.map(|m| m.token));
                if expected.is_some() {
                    model.remove(name);
                }
            }
            5 | 6 => clock.advance(Duration::from_millis(rng.below(20))),
            7 => {
                // Step back (the registry clamps); occasionally jump forward again.
                let raw = clock.now().as_nanos();
                clock.set(Timestamp::from_nanos(
                    raw.saturating_sub(rng.below(30) * 1_000_000),
                ));
            }
            8 => {
                let h = registry.holder(name);
                assert_eq!(
                    h.map(|h| h.token()),
                    live(&model, name, now).map(|m| m.token)
                );
            }
            9 => {
                let s = registry.snapshot();
                let held: Vec<u64> = s.held.iter().map(|l| l.token()).collect();
                let mut expected: Vec<(&str, u64)> = model
                    .iter()
                    .filter(|(_, m)| m.deadline > now || m.deadline == Timestamp::MAX)
                    .map(|(n, m)| (*n, m.token))
                    .collect();
                expected.sort();
                assert_eq!(held, expected.iter().map(|e| e.1).collect::<Vec<_>>());
                assert!(s.waiting.is_empty());
            }
            _ if !handles.is_empty() => {
                let i = rng.below(handles.len() as u64) as usize;
                let h = &handles[i];
                let m = live(&model, h.name(), now).filter(|m| m.token == h.token());
                assert_eq!(h.is_held(), m.is_some());
                let rem = h.remaining();
                let expected = m.map_or(Duration::ZERO, |m| {
                    m.deadline.saturating_duration_since(now)
                });
                assert_eq!(rem, expected, "remaining of {}", h.token());
            }
            _ => {
                let _ = registry.holder("a");
            }
        }
        // Keep the handle list bounded.
        if handles.len() > 64 {
            handles.swap_remove(0).detach();
        }
    }
}

/// Threads racing try_lock / blocking acquire / renew / release / drop / holder / snapshot
/// on a few names with long leases (nothing lapses): never two holders of a name, tokens
/// strictly increasing per name and unique across the registry.
#[test]
fn threads_racing_never_share_a_name_and_tokens_increase_per_name() {
    const THREADS: usize = 4;
    let per_thread = ops() / 10;
    let registry = LockRegistry::new(ManualClock::new());
    let inside: Arc<Vec<AtomicUsize>> =
        Arc::new((0..NAMES.len()).map(|_| AtomicUsize::new(0)).collect());
    let last: Arc<Vec<Mutex<u64>>> = Arc::new((0..NAMES.len()).map(|_| Mutex::new(0)).collect());
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (registry, inside, last, tokens) = (
                registry.clone(),
                inside.clone(),
                last.clone(),
                tokens.clone(),
            );
            thread::spawn(move || {
                let mut rng = Rng(0x1234_5678 + t as u64 * 7919);
                let ttl = Duration::from_secs(3600);
                let mut mine = Vec::new();
                for _ in 0..per_thread {
                    let i = rng.below(NAMES.len() as u64) as usize;
                    let name = NAMES[i];
                    let lock = match rng.below(4) {
                        0 | 1 => registry.try_lock(name, "t", ttl).unwrap(),
                        2 => block_on(registry.acquire(name, "t", ttl)).unwrap(),
                        _ => {
                            let _ = registry.holder(name);
                            if rng.below(64) == 0 {
                                let _ = registry.snapshot();
                            }
                            None
                        }
                    };
                    let Some(mut lock) = lock else { continue };
                    assert_eq!(
                        inside[i].fetch_add(1, Ordering::SeqCst),
                        0,
                        "two holders of {name}"
                    );
                    {
                        let mut l = last[i].lock().unwrap();
                        assert!(lock.token() > *l, "token went back on {name}");
                        *l = lock.token();
                    }
                    mine.push(lock.token());
                    if rng.below(2) == 0 {
                        lock.renew(ttl).unwrap();
                    }
                    assert!(lock.is_held());
                    inside[i].fetch_sub(1, Ordering::SeqCst);
                    if rng.below(2) == 0 {
                        assert!(lock.release());
                    } else {
                        drop(lock);
                    }
                }
                tokens.lock().unwrap().extend(mine);
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let tokens = tokens.lock().unwrap();
    let unique: HashSet<_> = tokens.iter().collect();
    assert_eq!(unique.len(), tokens.len());
    assert_eq!(registry.waiters(), 0);
    assert!(registry.snapshot().held.is_empty());
}

/// force_release racing renew / release / hand-offs / lapses on a moving clock: no panic,
/// no deadlock, tokens unique; a handle whose lease was force-released never renews; in the
/// end no waiter and no lease is left.
#[test]
fn force_release_racing_renew_release_and_hand_offs_leaves_a_clean_registry() {
    const THREADS: usize = 3;
    let per_thread = ops() / 20;
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let forced = Arc::new(AtomicUsize::new(0));
    let ticker = {
        let (clock, stop) = (clock.clone(), stop.clone());
        thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                clock.advance(Duration::from_millis(1));
                thread::yield_now();
            }
        })
    };
    let killer = {
        let (registry, stop, forced) = (registry.clone(), stop.clone(), forced.clone());
        thread::spawn(move || {
            let mut rng = Rng(42);
            while !stop.load(Ordering::SeqCst) {
                if registry
                    .force_release(NAMES[rng.below(NAMES.len() as u64) as usize])
                    .is_some()
                {
                    forced.fetch_add(1, Ordering::SeqCst);
                }
                thread::yield_now();
            }
        })
    };
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (registry, tokens) = (registry.clone(), tokens.clone());
            thread::spawn(move || {
                let mut rng = Rng(77 + t as u64);
                let mut mine = Vec::new();
                for _ in 0..per_thread {
                    let name = NAMES[rng.below(NAMES.len() as u64) as usize];
                    let ttl = Duration::from_millis(1 + rng.below(5));
                    let got = if rng.below(2) == 0 {
                        registry.try_lock(name, "w", ttl).unwrap()
                    } else {
                        block_on(
                            registry
                                .acquire(name, "w", ttl)
                                .timeout(Duration::from_millis(rng.below(4))),
                        )
                        .unwrap()
                    };
                    let Some(mut lock) = got else { continue };
                    mine.push(lock.token());
                    for _ in 0..rng.below(3) {
                        if lock.renew(ttl).is_err() {
                            assert!(!lock.is_held());
                            assert!(lock.renew(ttl).is_err(), "a lost lease renewed");
                            break;
                        }
                    }
                    if rng.below(2) == 0 {
                        let _ = lock.release();
                    }
                }
                tokens.lock().unwrap().extend(mine);
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    ticker.join().unwrap();
    killer.join().unwrap();
    let tokens = tokens.lock().unwrap();
    let unique: HashSet<_> = tokens.iter().collect();
    assert_eq!(unique.len(), tokens.len());
    assert_eq!(registry.waiters(), 0);
    assert!(
        registry.snapshot().held.is_empty(),
        "{:?}",
        registry.snapshot()
    );
    eprintln!(
        "grants {}, force-released {}",
        tokens.len(),
        forced.load(Ordering::SeqCst)
    );
}
