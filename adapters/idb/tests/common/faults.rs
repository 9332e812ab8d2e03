// Faults one context can show (run by tests/faults.rs in a window and in a dedicated worker;
// found by the review of issue 15): a clock far ahead or stepping back,
// a token counter at its ceiling, a renewal dropped in flight, a handle dropped while the
// connection is closed, waiters that went away, the database deleted under a holder, the
// io_timeout under a clock step. Each asserts what the docs promise.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use core::time::Duration;

use alkstore_idb::{IdbConfig, IdbLocks, LockError};
use alkstore_mem_conformance::browser_sleep;
use futures_lite::future::or;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::wasm_bindgen_test;

use crate::common::fresh_name;

#[wasm_bindgen(inline_js = r#"
const realNow = Date.now.bind(Date);
export function shiftDateNow(ms) { Date.now = () => realNow() + ms; }
export function restoreDateNow() { Date.now = realNow; }
export function perfNow() { return performance.now(); }
function open(db) {
  return new Promise((resolve, reject) => {
    const r = indexedDB.open(db);
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}
export async function putRaw(db, store, value) {
  const d = await open(db);
  await new Promise((resolve, reject) => {
    const tx = d.transaction(store, 'readwrite');
    tx.objectStore(store).put(value);
    tx.oncomplete = resolve;
    tx.onabort = () => reject(tx.error);
  });
  d.close();
}
export async function queueLength(db, name) {
  const d = await open(db);
  const row = await new Promise((resolve) => {
    const r = d.transaction('locks').objectStore('locks').get(name);
    r.onsuccess = () => resolve(r.result);
  });
  d.close();
  return row ? row.queue.length : -1;
}
export function deleteDb(db) {
  return new Promise((resolve, reject) => {
    const r = indexedDB.deleteDatabase(db);
    r.onsuccess = () => resolve();
    r.onerror = () => reject(r.error);
  });
}
// Another connection asks for version 2 and aborts its own upgrade: open connections got
// `versionchange` (the store closes its own); the database and its rows stay as they were.
export function abortedUpgrade(db) {
  return new Promise((resolve) => {
    const r = indexedDB.open(db, 2);
    r.onupgradeneeded = () => r.transaction.abort();
    r.onsuccess = () => { r.result.close(); resolve(); };
    r.onerror = () => resolve();
  });
}
// A readwrite transaction over both stores kept open for `ms` by a chain of reads.
export async function stall(db, ms) {
  const d = await open(db);
  const t0 = performance.now();
  await new Promise((resolve) => {
    const tx = d.transaction(['locks', 'meta'], 'readwrite');
    const s = tx.objectStore('meta');
    const again = () => { if (performance.now() - t0 < ms) s.get('clock').onsuccess = again; };
    again();
    tx.oncomplete = resolve;
    tx.onabort = resolve;
  });
  d.close();
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = shiftDateNow)]
    fn shift_date_now(ms: f64);
    #[wasm_bindgen(js_name = restoreDateNow)]
    fn restore_date_now();
    #[wasm_bindgen(js_name = perfNow)]
    fn perf_now() -> f64;
    #[wasm_bindgen(js_name = putRaw)]
    async fn put_raw(db: &str, store: &str, value: JsValue);
    #[wasm_bindgen(js_name = queueLength)]
    async fn queue_length(db: &str, name: &str) -> JsValue;
    #[wasm_bindgen(js_name = deleteDb)]
    async fn delete_db(db: &str);
    #[wasm_bindgen(js_name = abortedUpgrade)]
    async fn aborted_upgrade(db: &str);
    fn stall(db: &str, ms: f64) -> js_sys::Promise;
}

/// Puts `Date.now` back when dropped (also when a test fails).
struct ClockStep;

impl ClockStep {
    fn by(ms: f64) -> Self {
        shift_date_now(ms);
        ClockStep
    }
}

impl Drop for ClockStep {
    fn drop(&mut self) {
        restore_date_now();
    }
}

fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
}

/// `Some(out)` if `fut` resolves within `ms`, `None` otherwise.
async fn within<T>(ms: i32, fut: impl Future<Output = T>) -> Option<T> {
    or(async { Some(fut.await) }, async {
        browser_sleep(ms).await;
        None
    })
    .await
}

const MAX_EXACT: f64 = 9_007_199_254_740_991.0;

#[wasm_bindgen_test]
async fn a_token_counter_at_its_ceiling_never_hands_out_equal_tokens() {
    let db = fresh_name("faults-ceiling");
    let locks = IdbLocks::open(&db).await.unwrap();
    drop(
        locks
            .try_lock("warm", "a", Duration::from_secs(1))
            .await
            .unwrap(),
    );
    let clock = js_sys::JSON::parse(&format!(
        r#"{{"key":"clock","token":{},"floor":{}}}"#,
        MAX_EXACT - 1.0,
        js_sys::Date::now() * 1000.0
    ))
    .unwrap();
    put_raw(&db, "meta", clock).await;
    // The last token there is, once; then a refusal that says why, never a token again.
    let last = locks
        .try_lock("job", "a", Duration::from_millis(200))
        .await
        .unwrap()
        .expect("the name is free");
    assert_eq!(last.token() as f64, MAX_EXACT);
    assert!(last.release().await.unwrap());
    for owner in ["b", "c"] {
        match locks.try_lock("job", owner, Duration::from_millis(200)).await {
            Err(LockError::Unavailable { reason }) => {
                assert!(reason.contains("ceiling"), "{reason}")
            }
            other => panic!("expected a refusal at the ceiling, got {other:?}"),
        }
    }
    // Releases and looks still work: only new tokens are refused.
    assert_eq!(locks.holder("job").await.unwrap(), None);
}

#[wasm_bindgen_test]
async fn one_grant_made_with_a_clock_far_ahead_leaves_the_database_usable() {
    let db = fresh_name("faults-far-ahead");
    let locks = IdbLocks::open(&db).await.unwrap();
    {
        let _step = ClockStep::by(300.0 * 365.25 * 86_400_000.0);
        match locks
            .try_lock("elsewhere", "x", Duration::from_secs(1))
            .await
        {
            Err(LockError::Unavailable { reason }) => {
                assert!(reason.contains("later than 2155"), "{reason}")
            }
            other => panic!("a clock 300 years ahead is refused, got {other:?}"),
        }
    }
    let a = locks
        .try_lock("job", "a", Duration::from_secs(30))
        .await
        .unwrap()
        .expect("job was free");
    assert!(a.is_held().await.unwrap(), "a fresh 30 s lease is live");
    let b = locks
        .try_lock("job", "b", Duration::from_secs(30))
        .await
        .unwrap();
    assert!(
        b.is_none(),
        "a second owner got a name held for 30 s (tokens {} and {})",
        a.token(),
        b.as_ref().map_or(0, |b| b.token())
    );
}

#[wasm_bindgen_test]
async fn holder_matches_info_after_a_renew_whose_future_was_dropped() {
    let db = fresh_name("faults-renew-dropped");
    let locks = IdbLocks::open(&db).await.unwrap();
    let mut lock = locks
        .try_lock("job", "a", Duration::from_secs(4))
        .await
        .unwrap()
        .unwrap();
    {
        let mut renew = lock.renew(Duration::from_secs(9));
        assert!(poll_once(&mut renew).is_pending(), "the renewal is sent");
    }
    browser_sleep(200).await;
    assert_eq!(
        locks.holder("job").await.unwrap(),
        Some(lock.info()),
        "holder(name) reports exactly the handle's info()"
    );
}

#[wasm_bindgen_test]
async fn a_handle_dropped_while_the_connection_was_closed_still_releases() {
    let db = fresh_name("faults-drop-closed");
    let locks = IdbLocks::open(&db).await.unwrap();
    let lock = locks
        .try_lock("job", "a", Duration::from_secs(60))
        .await
        .unwrap()
        .unwrap();
    aborted_upgrade(&db).await;
    browser_sleep(50).await;
    drop(lock); // "the release transaction is sent at once and runs on its own"
    browser_sleep(300).await;
    let other = IdbLocks::open(&db).await.unwrap();
    assert_eq!(
        other.holder("job").await.unwrap(),
        None,
        "the dropped handle's lease was not released"
    );
}

#[wasm_bindgen_test]
async fn tickets_of_waiters_that_went_away_are_pruned_while_the_name_stays_held() {
    let db = fresh_name("faults-dead-tickets");
    let config = IdbConfig::new().with_waiter_heartbeat(Duration::from_millis(10));
    let locks = IdbLocks::open_with(&db, config).await.unwrap();
    let mut lock = locks
        .try_lock("job", "leader", Duration::from_secs(5))
        .await
        .unwrap()
        .unwrap();
    for i in 0..5 {
        let mut waiter =
            Box::pin(locks.acquire("job", &format!("gone-{i}"), Duration::from_secs(5)));
        assert!(poll_once(&mut waiter).is_pending());
        browser_sleep(30).await; // its ticket is in the queue
        // Its context went away: never polled again, never dropped (no cancel is sent).
        core::mem::forget(waiter);
    }
    browser_sleep(100).await; // every ticket missed three 10 ms heartbeats
    for _ in 0..3 {
        lock.renew(Duration::from_secs(5)).await.unwrap();
        let snapshot = locks.snapshot().await.unwrap();
        assert!(snapshot.waiting.is_empty(), "dead tickets are not listed");
    }
    let left = queue_length(&db, "job").await.as_f64().unwrap();
    assert_eq!(
        left, 0.0,
        "dead tickets stay in the name's row while it is held"
    );
}

#[wasm_bindgen_test]
async fn lapsed_resolves_when_the_database_is_deleted_under_the_holder() {
    let db = fresh_name("faults-deleted");
    let a = IdbLocks::open(&db).await.unwrap();
    let lock = a
        .try_lock("job", "a", Duration::from_secs(20))
        .await
        .unwrap()
        .unwrap();
    delete_db(&db).await;
    let b = IdbLocks::open(&db).await.unwrap();
    let taken = b
        .try_lock("job", "b", Duration::from_secs(20))
        .await
        .unwrap();
    assert!(taken.is_some(), "the deleted database held no lease");
    assert!(!lock.is_held().await.unwrap());
    let told = within(1000, lock.lapsed()).await;
    assert!(
        told.is_some(),
        "lapsed() did not resolve within 1 s although another store holds the name (it waits for the 20 s deadline)"
    );
    // It says why: not "released or force-released before its deadline".
    match told.unwrap() {
        LockError::Unavailable { reason } => assert!(
            reason.contains("gone with its database") && reason.contains("deleted or upgraded"),
            "{reason}"
        ),
        other => panic!("expected the database's loss, got {other}"),
    }
}

#[wasm_bindgen_test]
async fn after_a_clock_step_back_keep_alive_and_lapsed_report_a_lease_taken_over() {
    let db = fresh_name("faults-step-back");
    let config = IdbConfig::new().with_io_timeout(Duration::from_millis(100));
    let holder_store = IdbLocks::open_with(&db, config.clone()).await.unwrap();
    let other = IdbLocks::open_with(&db, config).await.unwrap();
    let lock = holder_store
        .try_lock("job", "h", Duration::from_millis(300))
        .await
        .unwrap()
        .unwrap();
    // The holder is busy past its deadline; another store takes the name over.
    browser_sleep(350).await;
    let taken = other
        .try_lock("job", "t", Duration::from_secs(30))
        .await
        .unwrap();
    assert!(taken.is_some(), "the lapsed lease is taken over");
    // Then the system clock steps back 20 s (NTP), before the holder looks again.
    // (No transaction of the holder's store before looking: one would refresh its estimate.)
    let _step = ClockStep::by(-20_000.0);
    let lapsed = within(1000, lock.lapsed()).await;
    let kept = within(1000, lock.keep_alive(Duration::ZERO)).await;
    assert!(
        !lock.is_held().await.unwrap(),
        "the engine knows the lease is lost"
    );
    assert!(
        lapsed.is_some() && kept.is_some(),
        "after the step back: lapsed() {}, keep_alive {} (is_held() says false)",
        if lapsed.is_some() {
            "resolved"
        } else {
            "pending after 1 s"
        },
        if kept.is_some() {
            "resolved"
        } else {
            "pending after 1 s, renewing nothing"
        },
    );
}

#[wasm_bindgen_test]
async fn the_io_timeout_holds_when_the_clock_steps_back_during_a_transaction() {
    let db = fresh_name("faults-watchdog");
    let config = IdbConfig::new().with_io_timeout(Duration::from_millis(300));
    let locks = IdbLocks::open_with(&db, config).await.unwrap();
    let stalled = wasm_bindgen_futures::JsFuture::from(stall(&db, 3000.0));
    browser_sleep(50).await;
    let t0 = perf_now();
    let mut try_lock = locks.try_lock("job", "a", Duration::from_secs(5));
    assert!(
        poll_once(&mut try_lock).is_pending(),
        "queued behind the stalled transaction"
    );
    let step = ClockStep::by(-3_600_000.0);
    let answer = try_lock.await;
    let took = perf_now() - t0;
    drop(step);
    let _ = stalled.await;
    assert!(
        took < 1000.0,
        "answered after {took:.0} ms with {answer:?}: the io_timeout is 300 ms"
    );
}
