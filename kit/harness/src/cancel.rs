//! Cancel safety, written once (issue 22): a call dropped at any point (a caller's own
//! timeout, a `select!` that lost) leaves no lease and no waiter held by no handle; a healthy
//! connection is never thrown away because a caller stopped waiting, so dropping a thousand
//! calls in a row opens no new server sessions; and an unrelated holder's `keep_alive` is not
//! disturbed by callers timing out around it.
//!
//! Drop points are spread over about one round trip measured first (two for waits), by a seeded
//! pseudo-random sequence (the seed is printed, so a failure can be replayed).

use std::future::Future;
use std::time::{Duration, Instant};

use alkstore_kit::Protocol;
use alkstore_mem::LockError;

use crate::fixture::{Fixture, Server, Store, ports};
use crate::support::{Jitter, eventually, io, run, store, store_at, store_with};

const TTL: Duration = Duration::from_secs(60);

/// A seeded sequence, printed.
fn jitter(test: &str) -> Jitter {
    let seed = std::time::UNIX_EPOCH
        .elapsed()
        .unwrap_or_default()
        .as_nanos() as u64;
    eprintln!("{test}: seed {seed}");
    Jitter::new(seed)
}

/// How long a try_lock takes here, in µs (the median of 21: outliers of a loaded machine
/// would put most drop points after the answer).
async fn round_trip_us<P: Protocol>(locks: &alkstore_kit::Locks<P>) -> u64 {
    let mut took = Vec::new();
    for _ in 0..21 {
        let start = Instant::now();
        let lock = locks
            .try_lock("calibrate", "o", TTL)
            .await
            .unwrap()
            .unwrap();
        took.push(start.elapsed().as_micros() as u64);
        assert!(lock.release().await.unwrap());
    }
    took.sort_unstable();
    took[took.len() / 2].max(50)
}

/// Drops `call(i)` after a random wait up to `spread_us` µs, `n` times; returns how many
/// were dropped before they answered. Answers are dropped at once (a lock releases).
async fn drop_calls<T, Fut>(
    n: usize,
    spread_us: u64,
    jitter: &mut Jitter,
    mut call: impl FnMut(usize) -> Fut,
) -> usize
where
    Fut: Future<Output = Result<T, LockError>>,
{
    let mut dropped = 0;
    for i in 0..n {
        let at = Duration::from_micros(jitter.below(spread_us));
        match tokio::time::timeout(at, call(i)).await {
            Err(_) => dropped += 1,
            Ok(Ok(answer)) => drop(answer),
            Ok(Err(err)) => panic!("call {i}: {err}"),
        }
    }
    dropped
}

/// Waits until `locks` holds no lease but `keep` (by token) and has no waiter, and no sleeper
/// is left registered.
async fn settles_empty<P: Protocol>(locks: &alkstore_kit::Locks<P>, keep: Option<u64>) {
    eventually("no lease held by no handle and no waiter left", || async {
        let snapshot = locks.snapshot().await.unwrap();
        let strays = snapshot.held.iter().filter(|l| Some(l.token()) != keep);
        strays.count() == 0 && snapshot.waiting.is_empty()
    })
    .await;
    eventually("no sleeper left", || async {
        locks.sleepers_for_test() == 0
    })
    .await;
}

/// 360 `try_lock`s dropped at random points leave no lease held by no handle.
pub fn dropped_try_locks_leave_no_lease_held_by_no_handle<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let mut jitter = jitter("try_lock");
        let spread = round_trip_us(&locks).await;
        let dropped = drop_calls(360, spread, &mut jitter, |i| {
            locks.try_lock(["a", "b", "c"][i % 3], "o", TTL)
        })
        .await;
        eprintln!("try_lock: {dropped} of 360 dropped in flight (spread {spread} µs)");
        assert!(dropped > 0, "no call was dropped in flight");
        settles_empty(&locks, None).await;
    });
}

/// 360 `acquire(..).timeout(ZERO)`s dropped at random points leave no lease behind.
pub fn dropped_zero_waits_leave_no_lease_held_by_no_handle<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let mut jitter = jitter("zero wait");
        let spread = round_trip_us(&locks).await;
        let dropped = drop_calls(360, spread, &mut jitter, |i| {
            let name = ["a", "b", "c"][i % 3];
            locks.acquire(name, "o", TTL).timeout(Duration::ZERO)
        })
        .await;
        eprintln!("zero wait: {dropped} of 360 dropped in flight (spread {spread} µs)");
        assert!(dropped > 0, "no call was dropped in flight");
        settles_empty(&locks, None).await;
    });
}

/// 300 waiting `acquire`s (unbounded, and bounded to 5 ms) dropped at random points leave
/// no waiter and no lease behind: the holder's release then frees the name.
pub fn dropped_waiting_acquires_leave_no_waiter_and_no_lease_behind<F: Fixture>(f: &F) {
    run(async {
        let locks = store(f).await;
        let mut jitter = jitter("waiting acquire");
        let spread = 2 * round_trip_us(&locks).await;
        let holder = locks.try_lock("w", "holder", TTL).await.unwrap().unwrap();
        let dropped = drop_calls(300, spread, &mut jitter, |i| {
            let acquire = locks.acquire("w", "waiter", TTL);
            if i % 3 == 0 {
                acquire.timeout(Duration::from_millis(5))
            } else {
                acquire
            }
        })
        .await;
        eprintln!("waiting acquire: {dropped} of 300 dropped (spread {spread} µs)");
        assert!(dropped > 0, "no call was dropped in flight");
        settles_empty(&locks, Some(holder.token())).await;
        assert!(holder.release().await.unwrap());
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            locks.holder("w").await.unwrap().is_none(),
            "handed to nobody"
        );
        settles_empty(&locks, None).await;
    });
}

/// A thousand calls dropped in a row open no more server sessions than the store had.
pub fn a_thousand_dropped_calls_open_no_new_sessions<F: Fixture>(f: &F) {
    let server = f.start_server(F::FAULT_PORTS[ports::SESSIONS]);
    run(async {
        let scope = crate::fresh_scope();
        let locks: Store<F> = store_at(f, &server.url(), &scope, io(Duration::from_secs(2))).await;
        let mut jitter = jitter("sessions");
        // Warm calls are quicker than the calibration's: most of these are cut in flight.
        let spread = round_trip_us(&locks).await;
        // Every session the store opens for itself, the wake-up listener's included.
        let held = locks.try_lock("w", "holder", TTL).await.unwrap().unwrap();
        let waited = locks
            .acquire("w", "o", TTL)
            .timeout(Duration::from_millis(50))
            .await;
        assert!(waited.unwrap().is_none());
        drop(held);
        settles_empty(&locks, None).await;
        let before = server.sessions_accepted();
        // A thousand calls at a time, until at least 50 were dropped in flight (a loaded
        // machine answers some rounds slower than the calibration's, or faster).
        let (mut dropped, mut calls) = (0, 0);
        while dropped < 50 && calls < 5000 {
            dropped += drop_calls(1000, spread, &mut jitter, |i| {
                locks.try_lock(["a", "b"][i % 2], "o", TTL)
            })
            .await;
            calls += 1000;
        }
        settles_empty(&locks, None).await;
        let opened = server.sessions_accepted().saturating_sub(before);
        eprintln!(
            "sessions: {dropped} of {calls} calls dropped in flight, {opened} sessions opened"
        );
        assert!(dropped >= 50, "only {dropped} calls were dropped in flight");
        assert!(
            opened <= 3,
            "{opened} new sessions for {dropped} dropped calls"
        );
    });
}

/// Ten tasks whose `acquire`s time out after 0-30 ms, for 3 s, around a holder that keeps its
/// lease alive: the holder keeps it, releases it, and the next waiter is served. (A 3 s ttl:
/// with 1.2 s, a loaded machine, make test's suites side by side, once let a renewal of the
/// PostgreSQL engine queue past it behind the dropped callers' withdrawals.)
pub fn a_holders_keep_alive_survives_callers_that_time_out_around_it<F: Fixture>(f: &F) {
    run(async {
        let locks = store_with(f, io(Duration::from_millis(500))).await;
        let ttl = Duration::from_secs(3);
        let holder = locks
            .try_lock("busy", "holder", ttl)
            .await
            .unwrap()
            .unwrap();
        let until = Instant::now() + Duration::from_secs(3);
        let callers: Vec<_> = (0..10u64)
            .map(|task| {
                let locks = locks.clone();
                tokio::spawn(async move {
                    let mut jitter = Jitter::new(task * 7919 + 1);
                    while Instant::now() < until {
                        let name = if task % 2 == 0 { "busy" } else { "other" };
                        let wait = Duration::from_millis(jitter.below(30));
                        let call = locks.acquire(name, "caller", ttl);
                        if let Ok(answer) = tokio::time::timeout(wait, call).await {
                            drop(answer.expect("no error for a caller"));
                        }
                    }
                })
            })
            .collect();
        tokio::select! {
            lost = holder.keep_alive(Duration::from_millis(300)) => panic!("lost: {lost}"),
            () = async { for caller in callers { caller.await.unwrap(); } } => {}
        }
        assert!(holder.release().await.unwrap());
        let next = locks
            .acquire("busy", "next", ttl)
            .timeout(Duration::from_secs(2))
            .await;
        assert!(next.unwrap().is_some());
    });
}
