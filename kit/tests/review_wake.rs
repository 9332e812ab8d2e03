//! A hostile review of the kit's wake-ups, on the model engine: wakers and listeners that
//! call back, panic or fail, and the listener's runtime. Each test is a defect found (and
//! fixed) or a corner checked.

mod model;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use alkstore_kit::{Lock, Locks};
use alkstore_mem::LockError;
use model::{Model, secs, store_delayed as store};
use tokio::task::JoinHandle;

/// A waker that cancels a sibling future when it is woken (as an executor that tears down
/// a `select!`'s losers from its wake-up does), and reports each wake-up.
struct Cancelling {
    sibling: Mutex<Option<Pin<Box<dyn Future<Output = ()> + Send>>>>,
    /// Whether a wake-up cancels the sibling (once the waiter sleeps in the queue).
    armed: AtomicBool,
    woken: Mutex<mpsc::Sender<()>>,
}

impl Wake for Cancelling {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        if self.armed.load(Ordering::SeqCst) {
            drop(self.sibling.lock().unwrap().take());
        }
        let _ = self.woken.lock().unwrap().send(());
    }
}

/// Finding: the listener woke sleepers while holding the registry's mutex, so a waker that
/// calls back into the store (here: dropping another waiting future, whose registration
/// leaves the registry) deadlocked the listener task and its worker thread for good.
#[test]
fn a_waker_that_calls_back_into_the_store_does_not_deadlock_the_listener() {
    let runtime = model::runtime(2);
    let locks = runtime.block_on(store(Duration::ZERO));
    let _holder = runtime.block_on(held(&locks, "job"));
    let _enter = runtime.enter();
    // A sibling waiter, registered for wake-ups.
    let mut sibling = Box::pin(locks.acquire("job", "sibling", secs(60)));
    let _ = sibling
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()));
    let (tx, rx) = mpsc::channel();
    let waker = Arc::new(Cancelling {
        sibling: Mutex::new(Some(Box::pin(async move {
            let _ = sibling.await;
        }))),
        armed: AtomicBool::new(false),
        woken: Mutex::new(tx),
    });
    let cancelling = Arc::clone(&waker);
    let waker = Waker::from(waker);
    let mut acquire = Box::pin(locks.acquire("job", "w", secs(60)));
    let mut cx = Context::from_waker(&waker);
    // Run it by hand until it sleeps in the queue (no wake-up for a while).
    assert!(acquire.as_mut().poll(&mut cx).is_pending());
    while rx.recv_timeout(Duration::from_millis(300)).is_ok() {
        assert!(acquire.as_mut().poll(&mut cx).is_pending());
    }
    cancelling.armed.store(true, Ordering::SeqCst);
    // Everybody re-checks: the listener wakes the sleeping waiter, whose waker calls back.
    futures_lite::future::block_on(locks.advance_test_clock(Duration::ZERO)).unwrap();
    if rx.recv_timeout(Duration::from_secs(10)).is_err() {
        // The listener's worker is stuck for good: do not wait for it at the runtime's drop.
        std::mem::forget(acquire);
        std::mem::forget(_enter);
        std::mem::forget(runtime);
        panic!("the listener deadlocked waking a waker that calls back into the store");
    }
    drop(acquire);
}
/// Checked sound: a listener whose subscription fails at once is restarted with its backoff
/// (20 ms doubling to 500 ms), not in a loop; waiters still wake at their own deadlines.
#[tokio::test(start_paused = true)]
async fn a_listener_that_fails_at_once_is_restarted_with_backoff() {
    use std::sync::atomic::Ordering::SeqCst;
    let locks = store(Duration::from_millis(1)).await;
    locks.engine().deafen();
    let holder = held(&locks, "job").await;
    let waiter = waiting_for_job(&locks);
    tokio::time::sleep(secs(10)).await;
    let listens = locks.engine().listens.load(SeqCst);
    // 20 + 40 + ... + 500 ms, then one every 500 ms: about 25 in 10 s.
    assert!((5..=30).contains(&listens), "{listens} listens in 10 s");
    // With no wake-up, the hand-off is found at the waiter's next heartbeat (1 s).
    handed_to_waiter(holder, waiter, secs(2), "by its heartbeat").await;
}

/// Checked sound: once the store's last clone and every handle, waiter and watch are gone,
/// no task of the kit is left on the runtime (the listener ends) and no sleeper remains.
#[tokio::test(start_paused = true)]
async fn dropping_the_store_and_its_waiters_leaves_no_task() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let locks = store(Duration::from_millis(1)).await;
    let holder = held(&locks, "job").await;
    let holder = std::sync::Arc::new(holder);
    let mut tasks = Vec::new();
    for i in 0..100 {
        let locks = locks.clone();
        tasks.push(tokio::spawn(async move {
            let _ = locks.acquire("job", &format!("w{i}"), secs(60)).await;
        }));
    }
    for _ in 0..3 {
        let holder = std::sync::Arc::clone(&holder);
        tasks.push(tokio::spawn(async move {
            let _ = tokio::join!(holder.keep_alive(Duration::ZERO), holder.lapsed());
        }));
    }
    tokio::time::sleep(secs(5)).await;
    assert_eq!(locks.sleepers_for_test(), 106);
    let engine = locks.engine().clone();
    drop(locks);
    for task in tasks {
        task.abort();
    }
    drop(holder);
    tokio::time::sleep(secs(1)).await;
    assert_eq!(metrics.num_alive_tasks(), 0, "tasks left behind");
    assert_eq!(engine.live(), (0, 0));
}

/// Finding: the listener was spawned on the runtime of the store's first sleeper, not on the
/// store's own runtime as its docs say. A first sleeper from a side runtime (a synchronous
/// wrapper's `block_on` on a current-thread runtime, idle afterwards) left the listener
/// there, never polled again: every later waiter lost its wake-ups for good, and a hand-off
/// waited for the waiter's heartbeat (here 60 s) instead of arriving at once.
#[test]
fn the_listener_runs_on_the_stores_runtime_not_the_first_sleepers() {
    let main = model::runtime(2);
    let locks = main.block_on(slow_heartbeat_store());
    let other = main.block_on(held(&locks, "other"));
    // The first sleeper comes from a side runtime, which then stays idle.
    let side = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    side.block_on(async {
        let _ = tokio::time::timeout(Duration::from_millis(20), other.lapsed()).await;
    });
    let holder = main.block_on(held(&locks, "job"));
    main.block_on(hands_off_to_a_waiter(&locks, holder));
    drop(side);
}

/// `name`, held by "h" for 600 s.
async fn held(locks: &Locks<Model>, name: &str) -> Lock<Model> {
    locks.try_lock(name, "h", secs(600)).await.unwrap().unwrap()
}

/// A store whose waiters' heartbeat is 60 s: within a test's 10 s, only a wake-up serves
/// them.
async fn slow_heartbeat_store() -> Locks<Model> {
    model::store_with(secs(1), Some(secs(60))).await
}

/// "w" waiting for "job" (ttl 60 s), in a task of its own on the current runtime.
fn waiting_for_job(locks: &Locks<Model>) -> JoinHandle<Result<Option<Lock<Model>>, LockError>> {
    let locks = locks.clone();
    tokio::spawn(async move { locks.acquire("job", "w", secs(60)).await })
}

/// Releases `holder` ("job") and checks that `waiter` (from [`waiting_for_job`]) is handed
/// the lease within `within`, served `by` what the test expects.
async fn handed_to_waiter(
    holder: Lock<Model>,
    waiter: JoinHandle<Result<Option<Lock<Model>>, LockError>>,
    within: Duration,
    by: &str,
) {
    assert!(holder.release().await.unwrap());
    let lock = tokio::time::timeout(within, waiter)
        .await
        .unwrap_or_else(|_| panic!("the waiter was not served {by} within {within:?}"))
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(lock.owner(), "w");
}

/// Releases `holder` ("job") while "w" waits for it: the hand-off's wake-up reaches it
/// within 10 s (not its 60 s heartbeat).
async fn hands_off_to_a_waiter(locks: &Locks<Model>, holder: Lock<Model>) {
    let waiter = waiting_for_job(locks);
    tokio::time::sleep(Duration::from_millis(100)).await;
    handed_to_waiter(holder, waiter, secs(10), "by the hand-off's wake-up").await;
}

/// And once the store's runtime has shut down, the listener runs on the current one.
#[test]
fn once_the_stores_runtime_is_gone_the_listener_runs_on_the_current_one() {
    let first = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let locks = first.block_on(slow_heartbeat_store());
    drop(first);
    let second = model::runtime(2);
    second.block_on(async {
        let holder = held(&locks, "job").await;
        hands_off_to_a_waiter(&locks, holder).await;
    });
}

/// A waker that panics once armed.
struct Panicking(AtomicBool);

impl Wake for Panicking {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        assert!(!self.0.load(Ordering::SeqCst), "a waker that panics");
    }
}

/// Finding: a waker that panics (an executor's bug, or one torn down) unwound through the
/// listener task and ended it, and nothing restarted it until another sleeper registered:
/// every waiter of the store lost its wake-ups meanwhile, and a hand-off waited for the
/// waiter's heartbeat (here 60 s). The listener now survives a waker's panic.
#[test]
fn a_waker_that_panics_does_not_end_the_listener() {
    let runtime = model::runtime(2);
    let locks = runtime.block_on(slow_heartbeat_store());
    let _other = runtime.block_on(held(&locks, "other"));
    let holder = runtime.block_on(held(&locks, "job"));
    let _enter = runtime.enter();
    // A waiter polled by hand with a waker that will panic.
    let panicking = Arc::new(Panicking(AtomicBool::new(false)));
    let waker = Waker::from(Arc::clone(&panicking));
    let mut bad = Box::pin(locks.acquire("other", "bad", secs(60)));
    for _ in 0..20 {
        assert!(
            bad.as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let waiter = waiting_for_job(&locks);
    std::thread::sleep(Duration::from_millis(100));
    panicking.0.store(true, Ordering::SeqCst);
    // Everybody re-checks: the bad waker panics in the listener.
    futures_lite::future::block_on(locks.advance_test_clock(Duration::ZERO)).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    runtime.block_on(handed_to_waiter(
        holder,
        waiter,
        secs(10),
        "by the hand-off's wake-up",
    ));
    panicking.0.store(false, Ordering::SeqCst);
    drop(bad);
}

/// Finding: an engine's listener that panicked (a message it could not parse) ended the
/// listener task, and nothing restarted it until another sleeper registered: every waiter
/// lost its wake-ups meanwhile (a hand-off waited for the waiter's heartbeat, here 60 s). A
/// panic is now one more failed subscription: the listener runs again after its backoff.
#[tokio::test(start_paused = true)]
async fn a_listener_that_panics_is_restarted() {
    let locks = slow_heartbeat_store().await;
    let holder = held(&locks, "job").await;
    let waiter = waiting_for_job(&locks);
    tokio::time::sleep(Duration::from_millis(100)).await;
    locks.engine().break_listener();
    locks.advance_test_clock(Duration::ZERO).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    handed_to_waiter(holder, waiter, secs(10), "by the hand-off's wake-up").await;
}
