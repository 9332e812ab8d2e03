//! Calls refused for time, on the model engine frozen as a server stopped with SIGSTOP
//! (deterministic: tokio's paused time): a caller told a call failed never ends up holding,
//! or queued for, a lease no handle has, once the engine runs the request after all.

mod model;

use std::time::Duration;

use alkstore_kit::Locks;
use alkstore_mem::LockError;
use model::{Model, unavailable};

const IO: Duration = Duration::from_millis(100);
const TTL: Duration = Duration::from_secs(600);

async fn store() -> Locks<Model> {
    model::store_with(IO, None).await
}

/// Lets the background undo (retried, pauses up to 2 s) and its confirmation run.
async fn settle() {
    tokio::time::sleep(Duration::from_secs(30)).await;
}

/// How a frozen model answers: never until the thaw, or `Unavailable` after a while as a
/// client library's response timeout does (the request still held, run after the
/// withdrawals sent after it).
const FREEZES: [Option<Duration>; 3] = [
    None,
    Some(Duration::from_millis(150)),
    Some(Duration::from_millis(30)),
];

#[tokio::test(start_paused = true)]
async fn a_try_lock_refused_for_time_leaves_no_lease_once_the_engine_runs_it() {
    for freeze in FREEZES {
        let locks = store().await;
        locks.engine().freeze(freeze);
        let started = tokio::time::Instant::now();
        unavailable(locks.try_lock("job", "a", TTL).await);
        assert!(
            started.elapsed() <= IO + Duration::from_millis(1),
            "{freeze:?}"
        );
        // Frozen for a while: the undo's attempts fail meanwhile.
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(locks.engine().held() >= 1, "the request is in the engine");
        locks.engine().thaw();
        settle().await;
        assert_eq!(locks.engine().live(), (0, 0), "{freeze:?}");
        assert!(locks.try_lock("job", "b", TTL).await.unwrap().is_some());
    }
}

#[tokio::test(start_paused = true)]
async fn a_step_refused_for_time_leaves_no_lease_and_no_waiter() {
    for marks in [true, false] {
        for freeze in FREEZES {
            for wait in [None, Some(Duration::from_millis(50)), Some(Duration::ZERO)] {
                let locks = store().await;
                if !marks {
                    locks.engine().without_marks();
                }
                let holder = locks.try_lock("busy", "h", TTL).await.unwrap().unwrap();
                locks.engine().freeze(freeze);
                for name in ["busy", "free"] {
                    let acquire = locks.acquire(name, "w", TTL);
                    let acquire = match wait {
                        Some(wait) => acquire.timeout(wait),
                        None => acquire,
                    };
                    unavailable(acquire.await);
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
                locks.engine().thaw();
                settle().await;
                let case = format!("marks {marks}, freeze {freeze:?}, wait {wait:?}");
                assert_eq!(locks.engine().live(), (1, 0), "{case}");
                assert_eq!(locks.sleepers_for_test(), 0, "{case}");
                assert!(holder.release().await.unwrap(), "{case}");
                assert_eq!(locks.engine().live(), (0, 0), "{case}");
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_release_refused_for_time_is_released_once_the_engine_answers() {
    for freeze in FREEZES {
        let locks = store().await;
        let lock = locks.try_lock("job", "a", TTL).await.unwrap().unwrap();
        locks.engine().freeze(freeze);
        unavailable(lock.release().await);
        tokio::time::sleep(Duration::from_secs(2)).await;
        locks.engine().thaw();
        settle().await;
        assert_eq!(locks.engine().live(), (0, 0), "{freeze:?}");
    }
}

/// A renewal refused for time may still be applied: the handle keeps the deadline it knew
/// (earlier than the lease's), the lease stays its own, and release ends it.
#[tokio::test(start_paused = true)]
async fn a_renew_refused_for_time_may_apply_and_the_handle_keeps_its_earlier_deadline() {
    let locks = store().await;
    let mut lock = locks
        .try_lock("job", "a", Duration::from_secs(10))
        .await
        .unwrap()
        .unwrap();
    let known = lock.deadline();
    locks.engine().freeze(None);
    unavailable(lock.renew(TTL).await);
    locks.engine().thaw();
    tokio::time::sleep(Duration::from_millis(10)).await;
    let lease = locks.holder("job").await.unwrap().expect("still held");
    assert_eq!(lease.token(), lock.token());
    assert!(lease.deadline() > known, "the refused renewal was applied");
    assert_eq!(lock.deadline(), known, "the handle errs early, never late");
    assert!(lock.is_held().await.unwrap());
    assert!(lock.release().await.unwrap());
    assert_eq!(locks.engine().live(), (0, 0));
}

/// A withdrawal that never reaches the engine is given up after its bounded attempts (the
/// lease then lapses at its deadline).
#[tokio::test(start_paused = true)]
async fn the_undo_gives_up_after_its_attempts() {
    let locks = store().await;
    locks.engine().freeze(Some(Duration::from_millis(30)));
    unavailable(locks.try_lock("job", "a", Duration::from_secs(60)).await);
    tokio::time::sleep(Duration::from_secs(30)).await;
    let tries = locks.engine().held();
    // The try_lock and ten withdrawals.
    assert_eq!(tries, 11, "bounded attempts");
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(locks.engine().held(), tries, "no attempt after the last");
    locks.engine().thaw();
    // The withdrawals ran before the try_lock (the worst order): the lease it was granted
    // lapses at its deadline, the documented end of a clean-up that never got through.
    assert_eq!(locks.engine().live(), (1, 0));
    locks
        .advance_test_clock(Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(locks.engine().live(), (0, 0));
}

/// Counts the kit's clean-up events by message.
/// Finding (a SQLite user's app): a renewal that got no answer in time (another
/// connection's 3 s write transaction on SQLite, a frozen server) ended `keep_alive` with
/// `Unavailable` while the lease was live for seconds more, and the work raced against it
/// was abandoned. It asks again while the deadline is ahead, and only a deadline passed
/// (by the local estimate of the engine's clock) ends it, as `Expired`.
#[tokio::test(start_paused = true)]
async fn keep_alive_outlasts_a_freeze_shorter_than_the_lease_and_ends_at_a_longer_one() {
    for freeze in FREEZES {
        let locks = store().await;
        let ttl = Duration::from_secs(2);
        let lock = locks.try_lock("job", "a", ttl).await.unwrap().unwrap();
        let alive = lock.keep_alive(Duration::ZERO);
        tokio::pin!(alive);
        // Renewals every 667 ms; frozen for 1 s from 600 ms: one or two renewals unanswered.
        tokio::select! {
            gone = &mut alive => panic!("{freeze:?}: {gone:?}"),
            () = tokio::time::sleep(Duration::from_millis(600)) => {}
        }
        locks.engine().freeze(freeze);
        tokio::select! {
            gone = &mut alive => panic!("{freeze:?}: ended during a 1 s freeze: {gone:?}"),
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        locks.engine().thaw();
        tokio::select! {
            gone = &mut alive => panic!("{freeze:?}: ended after the thaw: {gone:?}"),
            () = tokio::time::sleep(Duration::from_secs(5)) => {}
        }
        assert!(lock.is_held().await.unwrap(), "{freeze:?}");
        // Frozen past the ttl: the lease is lost by the deadline, and said so.
        locks.engine().freeze(freeze);
        let started = tokio::time::Instant::now();
        let gone = (&mut alive).await;
        assert!(
            matches!(gone, LockError::Expired { .. }),
            "{freeze:?}: {gone:?}"
        );
        assert!(
            started.elapsed() <= ttl,
            "{freeze:?}: {:?}",
            started.elapsed()
        );
        locks.engine().thaw();
    }
}
