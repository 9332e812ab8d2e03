//! A hostile review of the kit, on the model engine: each test is a defect found (and fixed)
//! or a corner checked.

mod model;

use std::time::Duration;

use model::{secs, store_delayed as store};

/// Finding: with no tokio runtime on the thread, `acquire(..).timeout(w)`, `keep_alive`,
/// `lapsed` and `snapshot` panicked inside tokio's timers ("there is no reactor running")
/// instead of answering `Unavailable`, as every other call does.
#[test]
fn with_no_runtime_every_call_answers_unavailable_not_a_panic() {
    use alkstore_mem::LockError;
    use futures_lite::future::block_on;
    use std::panic::{AssertUnwindSafe, catch_unwind};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let locks = runtime.block_on(store(Duration::ZERO));
    let lock = runtime
        .block_on(locks.try_lock("held", "w", secs(600)))
        .unwrap()
        .unwrap();
    // The engine's own I/O runs on tokio (here: its per-call delay).
    locks.engine().set_delay(Duration::from_millis(1));
    let unavailable =
        |what: &str, answer: Result<LockError, Box<dyn std::any::Any + Send>>| match answer {
            Ok(LockError::Unavailable { reason }) => {
                assert!(reason.contains("no tokio runtime"), "{what}: {reason}");
            }
            Ok(other) => panic!("{what}: {other:?}"),
            Err(_) => panic!("{what} panicked with no runtime"),
        };
    let bounded = catch_unwind(AssertUnwindSafe(|| {
        block_on(locks.acquire("held", "x", secs(60)).timeout(secs(1))).unwrap_err()
    }));
    unavailable("acquire(..).timeout(1s)", bounded);
    let keep = catch_unwind(AssertUnwindSafe(|| {
        block_on(lock.keep_alive(Duration::ZERO))
    }));
    unavailable("keep_alive", keep);
    let lapsed = catch_unwind(AssertUnwindSafe(|| block_on(lock.lapsed())));
    unavailable("lapsed", lapsed);
    let snapshot = catch_unwind(AssertUnwindSafe(|| block_on(locks.snapshot()).unwrap_err()));
    unavailable("snapshot", snapshot);
    assert_eq!(locks.sleepers_for_test(), 0);
    locks.engine().set_delay(Duration::ZERO);
    assert!(runtime.block_on(lock.release()).unwrap());
}

/// Finding: the kit read `std::time::Instant` for its bounds and its estimate of the
/// engine's clock, but slept on tokio's timers. Under tokio's paused clock (how users test
/// their code), a bounded wait never saw its bound pass and resolved to `Unavailable` at
/// `wait + io_timeout` instead of `Ok(None)` at `wait`.
#[tokio::test(start_paused = true)]
async fn a_bounded_wait_under_paused_time_ends_with_none_at_its_bound() {
    let locks = store(Duration::from_millis(1)).await;
    let _holder = locks
        .try_lock("job", "h", secs(600))
        .await
        .unwrap()
        .unwrap();
    let started = tokio::time::Instant::now();
    let got = locks.acquire("job", "w", secs(60)).timeout(secs(5)).await;
    assert!(matches!(got, Ok(None)), "{got:?}");
    let took = started.elapsed();
    assert!(took >= secs(5) && took < secs(6), "{took:?}");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(locks.engine().live(), (1, 0));
    assert_eq!(locks.sleepers_for_test(), 0);
}

/// Finding: renewals were applied only when the engine's clock read later than at the last
/// grant or renewal. When the engine's clock stepped back (an NTP step, a failover to a
/// replica behind), every renewal was thrown away and the engine's readings ignored:
/// `keep_alive`, seeing its old deadline come by the old reading, renewed in a tight loop
/// (once per round trip) and then gave up the lease as `Expired` although the engine held
/// it, renewed.
#[tokio::test(start_paused = true)]
async fn keep_alive_survives_the_engine_clock_stepping_back() {
    use std::sync::atomic::Ordering::SeqCst;
    let locks = store(Duration::from_millis(1)).await;
    let lock = locks.try_lock("job", "w", secs(10)).await.unwrap().unwrap();
    let engine = locks.engine();
    engine.set_clock(engine.clock() - 60_000_000_000);
    let before = engine.renewals.load(SeqCst);
    tokio::select! {
        lost = lock.keep_alive(Duration::ZERO) => panic!(
            "lost a live lease after {} renewals: {lost:?}",
            engine.renewals.load(SeqCst) - before
        ),
        () = tokio::time::sleep(secs(100)) => {}
    }
    let renewals = engine.renewals.load(SeqCst) - before;
    // The old deadline is 70 s away on the engine's clock now: the first renewal is due
    // in 63 s, then one every third of the ttl: about 12 in 100 s.
    assert!((1..=20).contains(&renewals), "{renewals} renewals in 100 s");
    assert!(lock.is_held().await.unwrap());
    assert_eq!(
        lock.deadline().as_nanos(),
        engine.clock() + 10_000_000_000,
        "the handle follows the renewals"
    );
    assert!(lock.release().await.unwrap());
}

/// Finding: a step answering "queued" with a holder's deadline or a wait deadline that had
/// already passed on the engine's own clock made the waiter step again after 1 ms, for as
/// long as the engine kept saying so: a busy loop of round trips (about 500 a second per
/// waiter here). A deadline already past tells nothing to wait for: the waiter sleeps its
/// heartbeat (or until a wake-up) instead.
#[tokio::test(start_paused = true)]
async fn deadlines_in_the_past_do_not_make_a_waiter_spin() {
    for lie in [
        model::Nonsense::HolderInThePast,
        model::Nonsense::WaitDeadlineInThePast,
    ] {
        let locks = store(Duration::from_millis(1)).await;
        let _holder = locks
            .try_lock("job", "h", secs(600))
            .await
            .unwrap()
            .unwrap();
        locks.engine().answer_with(lie);
        tokio::select! {
            got = locks.acquire("job", "w", secs(60)) => panic!("{lie:?}: {got:?}"),
            () = tokio::time::sleep(secs(10)) => {}
        }
        let steps = locks
            .engine()
            .steps
            .load(std::sync::atomic::Ordering::SeqCst);
        // One a heartbeat (1 s): about 10.
        assert!(steps <= 30, "{lie:?}: {steps} steps in 10 s");
    }
}

/// Finding: every call ran in a task spawned for it, so its request left only when that task
/// was first polled: a request made before another could reach the engine after it (a
/// waiter queued behind one that started later; the conformance suite, which counts a
/// waiter as queued after a few round trips, failed at random on a loaded machine). The
/// first poll now runs in the caller's poll, so requests leave in the order they are made;
/// only the rest of a call runs in its task.
#[test]
fn requests_reach_the_engine_in_the_order_they_are_made() {
    use alkstore_mem::Waiting;
    use futures_lite::future::poll_once;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let locks = store(Duration::ZERO).await;
        let _holder = locks.try_lock("job", "a", secs(60)).await.unwrap().unwrap();
        let mut b = Box::pin(locks.acquire("job", "b", secs(10)));
        let mut c = Box::pin(locks.acquire("job", "c", secs(10)));
        assert!(poll_once(&mut b).await.is_none());
        assert!(poll_once(&mut c).await.is_none());
        // Not a single yield since: both steps have reached the engine, in order.
        let waiting = locks.snapshot().await.unwrap().waiting;
        assert_eq!(
            waiting,
            [Waiting::new("job", "b"), Waiting::new("job", "c")]
        );
        // And a call the engine answers at once resolves at its first poll.
        assert!(poll_once(locks.holder("job")).await.is_some());
    });
}

/// Finding: a `release` whose call was cut by its runtime shutting down (awaited through
/// `Handle::block_on` from a thread of its own, as synchronous bridges do, while the program
/// shuts the runtime down) answered `Unavailable` and also cleared the handle's release on
/// drop, so the lease, maybe never released, stayed held by nobody for its whole ttl. A
/// release that failed now leaves the handle's drop to release it (in the background, or by
/// the fallback at shutdown; a second release of a released lease changes nothing).
#[test]
fn a_release_cut_by_the_runtime_shutting_down_is_still_released() {
    let runtime = model::runtime(1);
    let locks = runtime.block_on(store(Duration::ZERO));
    let lock = runtime
        .block_on(locks.try_lock("job", "w", secs(600)))
        .unwrap()
        .unwrap();
    locks.engine().set_delay(Duration::from_millis(200));
    let handle = runtime.handle().clone();
    let bridge = std::thread::spawn(move || handle.block_on(lock.release()));
    std::thread::sleep(Duration::from_millis(50));
    drop(runtime);
    let answer = bridge.join().unwrap();
    assert!(answer.is_err(), "{answer:?}");
    assert_eq!(locks.engine().live(), (0, 0), "the lease was released");
}

/// Checked sound: ttls at their extremes. `Duration::MAX` gives a deadline that never comes
/// (no renewal, no lapse, no overflow in any timer); 1 ns lapses at once by the estimate.
#[tokio::test(start_paused = true)]
async fn ttls_of_duration_max_and_one_nanosecond() {
    use std::sync::atomic::Ordering::SeqCst;
    let locks = store(Duration::from_millis(1)).await;
    let forever = locks
        .try_lock("forever", "w", Duration::MAX)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(forever.deadline(), alkstore_mem::Timestamp::MAX);
    let before = locks.engine().renewals.load(SeqCst);
    tokio::select! {
        lost = forever.keep_alive(Duration::ZERO) => panic!("{lost:?}"),
        lost = forever.lapsed() => panic!("{lost:?}"),
        () = tokio::time::sleep(secs(100_000)) => {}
    }
    assert_eq!(
        locks.engine().renewals.load(SeqCst),
        before,
        "no renewal due"
    );
    let waiter = locks
        .acquire("forever", "x", Duration::MAX)
        .timeout(secs(5))
        .await;
    assert!(matches!(waiter, Ok(None)), "{waiter:?}");
    assert!(forever.release().await.unwrap());
    let got = locks
        .acquire("forever", "x", Duration::MAX)
        .timeout(Duration::MAX)
        .await
        .unwrap()
        .unwrap();
    assert!(got.release().await.unwrap());

    let brief = locks
        .try_lock("brief", "w", Duration::from_nanos(1))
        .await
        .unwrap()
        .unwrap();
    let lost = tokio::time::timeout(secs(1), brief.lapsed())
        .await
        .expect("lapses at once by the estimate");
    assert!(matches!(lost, alkstore_mem::LockError::Expired { .. }));
    let refused = brief.keep_alive(Duration::ZERO).await;
    assert!(matches!(
        refused,
        alkstore_mem::LockError::InvalidTtl { .. }
    ));
}

/// Checked sound: the engine's clock at 0 and at `u64::MAX` (a lease granted there is over
/// at once: its deadline cannot be after now): answers, no panic, nothing left behind.
#[tokio::test(start_paused = true)]
async fn engine_clocks_at_zero_and_at_the_end_of_time() {
    let locks = store(Duration::from_millis(1)).await;
    locks.engine().set_clock(0);
    let lock = locks.try_lock("job", "w", secs(10)).await.unwrap().unwrap();
    assert_eq!(lock.deadline().as_nanos(), 10_000_000_000);
    tokio::select! {
        lost = lock.keep_alive(Duration::ZERO) => panic!("{lost:?}"),
        () = tokio::time::sleep(secs(30)) => {}
    }
    assert!(lock.release().await.unwrap());

    locks.engine().set_clock(u64::MAX);
    let lock = locks.try_lock("job", "w", secs(10)).await.unwrap().unwrap();
    assert_eq!(lock.deadline(), alkstore_mem::Timestamp::MAX);
    let lost = tokio::time::timeout(secs(1), lock.lapsed()).await.unwrap();
    assert!(matches!(lost, alkstore_mem::LockError::Expired { .. }));
    let lost = tokio::time::timeout(secs(1), lock.keep_alive(Duration::ZERO))
        .await
        .unwrap();
    assert!(matches!(lost, alkstore_mem::LockError::Expired { .. }));
    assert!(!lock.is_held().await.unwrap());
    assert!(!lock.release().await.unwrap());
    let got = locks.acquire("job", "x", secs(10)).timeout(secs(1)).await;
    drop(got);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(locks.sleepers_for_test(), 0);
}

/// Checked sound: keep_alive raced from eight tasks on one handle (it is `Sync`), with the
/// engine's clock moving, keeps the lease, and the handle follows the engine's deadline.
#[tokio::test(start_paused = true)]
async fn keep_alive_from_eight_tasks_on_one_handle() {
    let locks = store(Duration::from_millis(1)).await;
    let lock = std::sync::Arc::new(locks.try_lock("job", "w", secs(10)).await.unwrap().unwrap());
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let lock = std::sync::Arc::clone(&lock);
        tasks.push(tokio::spawn(async move {
            lock.keep_alive(Duration::ZERO).await
        }));
    }
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        locks
            .advance_test_clock(Duration::from_millis(500))
            .await
            .unwrap();
    }
    for task in &tasks {
        assert!(!task.is_finished(), "a keep_alive gave up a live lease");
    }
    for task in tasks {
        task.abort();
    }
    let engine_deadline = locks.holder("job").await.unwrap().unwrap().deadline();
    assert!(lock.deadline() <= engine_deadline);
    assert!(lock.is_held().await.unwrap());
    let lock = std::sync::Arc::into_inner(lock).unwrap();
    assert!(lock.release().await.unwrap());
}

/// Checked sound: clones of one store on four threads, each with a current-thread runtime of
/// its own (the store's own runtime kept running), take turns on one name: never two
/// holders at once, every turn served, nothing left behind.
#[test]
fn clones_on_four_threads_take_turns() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let main = model::runtime(1);
    let locks = main.block_on(store(Duration::ZERO));
    let inside = std::sync::Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (locks, inside) = (locks.clone(), std::sync::Arc::clone(&inside));
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async {
                    for i in 0..50 {
                        let lock = locks
                            .acquire("job", &format!("t{t}-{i}"), secs(60))
                            .timeout(secs(30))
                            .await
                            .unwrap()
                            .expect("served within 30 s");
                        assert_eq!(inside.fetch_add(1, SeqCst), 0, "two holders at once");
                        tokio::task::yield_now().await;
                        inside.fetch_sub(1, SeqCst);
                        assert!(lock.release().await.unwrap());
                    }
                });
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    main.block_on(async { tokio::time::sleep(Duration::from_millis(50)).await });
    assert_eq!(locks.engine().live(), (0, 0));
    assert_eq!(locks.sleepers_for_test(), 0);
}
