//! Cancel safety, on the model engine: a call dropped at any point leaves no lease and no
//! waiter held by no handle, and no sleeper registered.

mod model;

use std::time::Duration;

use model::store_delayed as store;

/// A small deterministic generator, so that a failure replays.
fn steps(seed: u64, n: usize) -> impl Iterator<Item = Duration> {
    let mut x = seed;
    (0..n).map(move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        Duration::from_micros(x % 2500)
    })
}

/// Lets the tasks the drops left behind run to their ends.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(50)).await;
}

#[tokio::test(start_paused = true)]
async fn try_lock_dropped_at_any_point_leaves_no_lease() {
    let locks = store(Duration::from_millis(2)).await;
    let mut granted = 0;
    for (i, after) in steps(7, 1000).enumerate() {
        let name = format!("job-{}", i % 4);
        let call = locks.try_lock(&name, "w", Duration::from_secs(60));
        if let Ok(answer) = tokio::time::timeout(after, call).await {
            // Held only for a moment, then dropped: released.
            granted += usize::from(answer.unwrap().is_some());
        }
    }
    settle().await;
    assert!(granted > 0, "some calls finished in time");
    assert!(granted < 1000, "some calls were dropped in flight");
    assert_eq!(
        locks.engine().live(),
        (0, 0),
        "no lease or entry held by no handle"
    );
}

#[tokio::test(start_paused = true)]
async fn acquire_dropped_at_any_point_leaves_no_lease_and_no_waiter() {
    let locks = store(Duration::from_millis(1)).await;
    let holder = locks
        .try_lock("busy", "h", Duration::from_secs(600))
        .await
        .unwrap()
        .unwrap();
    for (i, after) in steps(11, 600).enumerate() {
        let name = if i % 2 == 0 { "busy" } else { "free" };
        let wait = [
            Duration::ZERO,
            Duration::from_millis(2),
            Duration::from_secs(30),
        ][i % 3];
        let call = locks
            .acquire(name, "w", Duration::from_secs(60))
            .timeout(wait);
        let _ = tokio::time::timeout(after, call).await;
    }
    settle().await;
    assert_eq!(
        locks.engine().live(),
        (1, 0),
        "only the holder's lease is left"
    );
    assert_eq!(locks.sleepers_for_test(), 0, "no sleeper left registered");
    assert!(holder.release().await.unwrap());
    assert_eq!(locks.engine().live(), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn without_marks_a_step_that_lands_after_the_withdrawal_is_withdrawn_again() {
    let locks = store(Duration::from_millis(1)).await;
    locks.engine().without_marks();
    locks.engine().set_step_delay(Duration::from_millis(2));
    for (i, after) in steps(5, 400).enumerate() {
        let name = format!("job-{}", i % 3);
        let call = locks
            .acquire(&name, "w", Duration::from_secs(60))
            .timeout(Duration::from_secs(5));
        if let Ok(answer) = tokio::time::timeout(after, call).await {
            drop(answer.unwrap());
        }
    }
    settle().await;
    assert_eq!(
        locks.engine().live(),
        (0, 0),
        "no lease or entry held by no handle"
    );
}

#[tokio::test(start_paused = true)]
async fn a_waiter_dropped_while_its_grant_is_in_flight_passes_the_lease_on() {
    let locks = store(Duration::from_millis(1)).await;
    let holder = locks
        .try_lock("job", "h", Duration::from_secs(600))
        .await
        .unwrap()
        .unwrap();
    let first = tokio::spawn({
        let locks = locks.clone();
        async move { locks.acquire("job", "first", Duration::from_secs(60)).await }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    let second = tokio::spawn({
        let locks = locks.clone();
        async move {
            locks
                .acquire("job", "second", Duration::from_secs(60))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    // The release hands the lease to `first`; `first` is dropped before it picks it up.
    let release = tokio::spawn(holder.release());
    tokio::time::sleep(Duration::from_micros(1500)).await;
    first.abort();
    assert!(release.await.unwrap().unwrap());
    let lock = tokio::time::timeout(Duration::from_secs(5), second)
        .await
        .expect("the second waiter is served")
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(lock.owner(), "second");
    drop(lock);
    settle().await;
    assert_eq!(locks.engine().live(), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_release_dropped_in_flight_still_releases() {
    let locks = store(Duration::from_millis(5)).await;
    for after in steps(3, 50) {
        let lock = locks
            .try_lock("job", "w", Duration::from_secs(600))
            .await
            .unwrap()
            .unwrap();
        let _ = tokio::time::timeout(after, lock.release()).await;
        settle().await;
        assert_eq!(locks.engine().live(), (0, 0), "dropped after {after:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn keep_alive_and_lapsed_dropped_leave_no_sleeper() {
    let locks = store(Duration::ZERO).await;
    let lock = locks
        .try_lock("job", "w", Duration::from_secs(10))
        .await
        .unwrap()
        .unwrap();
    for _ in 0..100 {
        let _ =
            tokio::time::timeout(Duration::from_millis(3), lock.keep_alive(Duration::ZERO)).await;
        let _ = tokio::time::timeout(Duration::from_millis(3), lock.lapsed()).await;
    }
    assert_eq!(locks.sleepers_for_test(), 0);
    assert!(lock.release().await.unwrap());
}

#[test]
fn locks_dropped_as_the_runtime_shuts_down_are_released_by_the_fallback() {
    let runtime = model::runtime(1);
    let locks = runtime.block_on(store(Duration::ZERO));
    let held: Vec<_> = runtime.block_on(async {
        let mut held = Vec::new();
        for i in 0..20 {
            let name = format!("job-{i}");
            held.push(
                locks
                    .try_lock(&name, "w", Duration::from_secs(600))
                    .await
                    .unwrap()
                    .unwrap(),
            );
        }
        held
    });
    assert_eq!(locks.engine().live(), (20, 0));
    // Moved into tasks that the shutdown drops unfinished.
    for lock in held {
        runtime.spawn(async move {
            std::future::pending::<()>().await;
            drop(lock);
        });
    }
    drop(runtime);
    assert_eq!(
        locks.engine().live(),
        (0, 0),
        "every lease released at shutdown"
    );
}

#[test]
fn a_lock_dropped_with_no_runtime_is_released() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let locks = runtime.block_on(store(Duration::ZERO));
    let lock = runtime
        .block_on(locks.try_lock("job", "w", Duration::from_secs(600)))
        .unwrap()
        .unwrap();
    drop(runtime);
    drop(lock);
    assert_eq!(locks.engine().live(), (0, 0));
    // And a call with no runtime is refused, not a panic.
    let err = futures_lite::future::block_on(locks.holder("job")).unwrap_err();
    assert!(err.to_string().contains("no tokio runtime"), "{err}");
}
