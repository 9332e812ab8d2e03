// What only this engine has, run by tests/engine.rs in a window and in a dedicated worker:
// IndexedDB missing, forbidden, stuck or holding rows it did not write;
// the database deleted under a store; two stores of one context sharing locks over the
// BroadcastChannel; `holder` reporting exactly the handle's lease; keep-alive's refusal;
// `steal` in one transaction; `query` listing waiters in request order.

use core::future::Future;
use core::task::{Context, Poll, Waker};
use core::time::Duration;

use alkstore_idb::{IdbConfig, IdbLocks, LockError, TtlProblem};
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::wasm_bindgen_test;

use crate::common::fresh_name;

#[wasm_bindgen(inline_js = r#"
// `indexedDB` is an own property of a window, and inherited in a worker: shadowed by an own
// property, then put back exactly as it was.
let saved = null;
export function hideIndexedDb(how) {
  saved = Object.getOwnPropertyDescriptor(globalThis, 'indexedDB');
  if (how === 'absent') Object.defineProperty(globalThis, 'indexedDB', { value: undefined, configurable: true });
  else Object.defineProperty(globalThis, 'indexedDB', { configurable: true,
    get() { throw new DOMException('The operation is insecure.', 'SecurityError'); } });
}
export function restoreIndexedDb() {
  if (saved) Object.defineProperty(globalThis, 'indexedDB', saved); else delete globalThis.indexedDB;
}
export function putRaw(db, store, value) {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(db);
    open.onsuccess = () => {
      const tx = open.result.transaction(store, 'readwrite');
      tx.objectStore(store).put(value);
      tx.oncomplete = () => { open.result.close(); resolve(); };
      tx.onabort = () => reject(tx.error);
    };
    open.onerror = () => reject(open.error);
  });
}
// A connection that never closes, and a delete queued behind it: every later open of `db`
// waits for that delete, forever.
export function wedge(db) {
  return new Promise((resolve) => {
    const open = indexedDB.open(db, 1);
    open.onsuccess = () => { globalThis.__wedged = open.result; indexedDB.deleteDatabase(db); resolve(); };
  });
}
// What `indexedDB.open(name)` alone makes: a database at version 1 with no object store.
export function emptyDb(db) {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(db);
    open.onsuccess = () => { open.result.close(); resolve(); };
    open.onerror = () => reject(open.error);
  });
}
export function deleteDb(db) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.deleteDatabase(db);
    req.onsuccess = () => resolve();
    req.onerror = () => reject(req.error);
  });
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = hideIndexedDb)]
    fn hide_indexed_db(how: &str);
    #[wasm_bindgen(js_name = restoreIndexedDb)]
    fn restore_indexed_db();
    #[wasm_bindgen(js_name = putRaw)]
    async fn put_raw(db: &str, store: &str, value: JsValue);
    async fn wedge(db: &str);
    #[wasm_bindgen(js_name = deleteDb)]
    async fn delete_db(db: &str);
    #[wasm_bindgen(js_name = emptyDb)]
    async fn empty_db(db: &str);
}

fn unavailable(result: Result<IdbLocks, LockError>) -> String {
    match result {
        Err(LockError::Unavailable { reason }) => reason,
        Err(other) => panic!("expected Unavailable, got {other:?}"),
        Ok(store) => panic!("expected Unavailable, opened {store:?}"),
    }
}

/// Opens a store while `indexedDB` is hidden as `how`. The store reads the global at the
/// first poll, which answers at once here: the global is put back before anything else
/// (other tests run concurrently) can see it missing.
fn open_without_indexeddb(how: &str) -> Result<IdbLocks, LockError> {
    let mut open = Box::pin(IdbLocks::open("never-created"));
    hide_indexed_db(how);
    let first = open.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    restore_indexed_db();
    match first {
        Poll::Ready(result) => result,
        Poll::Pending => panic!("open without IndexedDB should answer at once"),
    }
}

#[wasm_bindgen_test]
fn missing_indexeddb_is_unavailable_not_a_panic() {
    let reason = unavailable(open_without_indexeddb("absent"));
    assert!(reason.contains("not available"), "{reason}");
}

#[wasm_bindgen_test]
fn forbidden_indexeddb_is_unavailable_not_a_panic() {
    let reason = unavailable(open_without_indexeddb("throws"));
    assert!(reason.contains("SecurityError"), "{reason}");
}

#[wasm_bindgen_test]
async fn an_open_stuck_behind_another_connection_gives_up_at_the_io_timeout() {
    let name = fresh_name("wedged");
    wedge(&name).await;
    let config = IdbConfig::new().with_io_timeout(Duration::from_millis(300));
    let reason = unavailable(IdbLocks::open_with(&name, config).await);
    assert!(reason.contains("not opened within 300ms"), "{reason}");
}

#[wasm_bindgen_test]
async fn rows_it_did_not_write_are_unavailable_with_the_name_and_change_nothing() {
    let name = fresh_name("malformed");
    let locks = IdbLocks::open(&name).await.unwrap();
    let bad = js_sys::JSON::parse(r#"{"name":"bad","lease":{"owner":7},"queue":[]}"#).unwrap();
    put_raw(&name, "locks", bad).await;
    for err in [
        locks.try_lock("bad", "a", Duration::from_secs(5)).await.map(|_| ()),
        locks.holder("bad").await.map(|_| ()),
        locks.snapshot().await.map(|_| ()),
    ] {
        match err {
            Err(LockError::Unavailable { reason }) => {
                assert!(reason.contains("malformed row for \"bad\""), "{reason}")
            }
            other => panic!("expected Unavailable, got {other:?}"),
        }
    }
    // Other names are untouched.
    let lock = locks.try_lock("good", "a", Duration::from_secs(5)).await.unwrap().unwrap();
    assert!(lock.release().await.unwrap());
    // A clock row it did not write stops everything, with a reason.
    let clock = js_sys::JSON::parse(r#"{"key":"clock","token":"x","floor":0}"#).unwrap();
    put_raw(&name, "meta", clock).await;
    match locks.try_lock("good", "a", Duration::from_secs(5)).await {
        Err(LockError::Unavailable { reason }) => assert!(reason.contains("\"clock\""), "{reason}"),
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

#[wasm_bindgen_test]
async fn a_database_deleted_under_the_store_is_opened_again() {
    let name = fresh_name("deleted");
    let locks = IdbLocks::open(&name).await.unwrap();
    let first = locks.try_lock("job", "a", Duration::from_secs(30)).await.unwrap().unwrap();
    let token = first.token();
    first.detach();
    // The store closes its connection when asked to, so the delete goes through.
    delete_db(&name).await;
    let again = locks.try_lock("job", "b", Duration::from_secs(30)).await.unwrap();
    let again = again.expect("the deleted database held no lease");
    assert!(again.token() > token, "tokens still increase after the counter was lost");
}

#[wasm_bindgen_test]
async fn an_empty_database_of_the_same_name_gets_its_stores() {
    let name = fresh_name("empty");
    empty_db(&name).await;
    let locks = IdbLocks::open(&name).await.expect("the stores are made with the next version");
    let lock = locks.try_lock("job", "a", Duration::from_secs(5)).await.unwrap().unwrap();
    assert!(lock.release().await.unwrap());
    // Another store of this context opens it as it is now.
    let again = IdbLocks::open(&name).await.unwrap();
    assert!(again.try_lock("job", "b", Duration::from_secs(5)).await.unwrap().is_some());
}

#[wasm_bindgen_test]
async fn holder_reports_exactly_the_handles_lease() {
    let locks = IdbLocks::open(&fresh_name("holder")).await.unwrap();
    let mut lock = locks.try_lock("job", "a", Duration::from_millis(1500)).await.unwrap().unwrap();
    assert_eq!(locks.holder("job").await.unwrap(), Some(lock.info()));
    lock.renew(Duration::from_secs(40)).await.unwrap();
    assert_eq!(locks.holder("job").await.unwrap(), Some(lock.info()));
    assert_eq!(lock.ttl(), Duration::from_secs(40));
}

#[wasm_bindgen_test]
async fn two_stores_of_one_context_share_locks_and_wake_each_other() {
    let name = fresh_name("two-stores");
    let a = IdbLocks::open(&name).await.unwrap();
    let b = IdbLocks::open(&name).await.unwrap();
    let held = a.try_lock("job", "a", Duration::from_secs(30)).await.unwrap().unwrap();
    assert!(b.try_lock("job", "b", Duration::from_secs(30)).await.unwrap().is_none());
    // b waits (heartbeat 1 s, holder's deadline 30 s away): only the BroadcastChannel
    // message from a's release can wake it within the half second allowed.
    let waiter = b.acquire("job", "b", Duration::from_secs(30)).timeout(Duration::from_millis(500));
    let release = async {
        alkstore_mem_conformance::browser_sleep(100).await;
        held.release().await.unwrap()
    };
    let (got, released) = futures_lite::future::zip(waiter, release).await;
    assert!(released);
    assert_eq!(got.unwrap().expect("woken by the release").owner(), "b");
}

#[wasm_bindgen_test]
async fn keep_alive_refuses_a_ttl_under_twice_the_io_timeout() {
    let config = IdbConfig::new().with_io_timeout(Duration::from_secs(1));
    let locks = IdbLocks::open_with(&fresh_name("short"), config).await.unwrap();
    let lock = locks.try_lock("job", "a", Duration::from_millis(1999)).await.unwrap().unwrap();
    match lock.keep_alive(Duration::ZERO).await {
        LockError::InvalidTtl { problem: TtlProblem::TooShortToKeepAlive { io_timeout }, .. } => {
            assert_eq!(io_timeout, Duration::from_secs(1))
        }
        other => panic!("expected TooShortToKeepAlive, got {other:?}"),
    }
}

#[wasm_bindgen_test]
async fn a_ttl_keep_alive_cannot_keep_is_refused_when_asked_never_as_a_lost_lease() {
    let config = IdbConfig::new().with_io_timeout(Duration::from_secs(1));
    let locks = IdbLocks::open_with(&fresh_name("short-now"), config).await.unwrap();
    let short = Duration::from_millis(1999);
    // Before anything is acquired.
    match locks.check_keep_alive_ttl(short) {
        Err(LockError::InvalidTtl { problem: TtlProblem::TooShortToKeepAlive { io_timeout }, ttl }) => {
            assert_eq!((io_timeout, ttl), (Duration::from_secs(1), short));
        }
        other => panic!("expected TooShortToKeepAlive, got {other:?}"),
    }
    assert!(matches!(
        locks.check_keep_alive_ttl(Duration::ZERO),
        Err(LockError::InvalidTtl { problem: TtlProblem::Zero, .. })
    ));
    assert!(locks.check_keep_alive_ttl(Duration::from_secs(2)).is_ok());
    // When keep-alive is asked for, not when its future is polled.
    let lock = locks.try_lock("job", "a", short).await.unwrap().unwrap();
    assert!(matches!(
        lock.try_keep_alive(Duration::ZERO),
        Err(LockError::InvalidTtl { problem: TtlProblem::TooShortToKeepAlive { .. }, .. })
    ));
    lock.release().await.unwrap();
    let lock = locks.try_lock("job", "a", Duration::from_secs(3)).await.unwrap().unwrap();
    let alive = lock.try_keep_alive(Duration::ZERO).expect("a 3 s ttl can be kept alive");
    let mut alive = core::pin::pin!(alive);
    let mut cx = Context::from_waker(Waker::noop());
    assert!(alive.as_mut().poll(&mut cx).is_pending(), "a kept lease is not lost");
}

#[wasm_bindgen_test]
async fn every_context_records_one_id_per_database_held_as_a_web_lock_for_its_life() {
    let name = fresh_name("presence");
    let a = IdbLocks::open(&name).await.unwrap();
    let b = IdbLocks::open(&name).await.unwrap();
    let id = a.context_id().expect("Web Locks exist in Chromium windows and workers");
    assert_eq!(b.context_id().as_deref(), Some(id.as_str()), "one id per context and database");
    let other = IdbLocks::open(&fresh_name("presence-other")).await.unwrap();
    assert_ne!(other.context_id().as_deref(), Some(id.as_str()));
    // Its presence lock is held (and stays held after the stores are dropped: a detached
    // lease still belongs to a live context).
    drop((a, b));
    assert!(presence_held(&format!("alkstore:ctx:{name}:{id}")).await.as_bool().unwrap());
    // Without presence: no id, and the leases carry none (the ttl rules them).
    let quiet = IdbLocks::open_with(&fresh_name("no-presence"), IdbConfig::new().with_presence(false))
        .await
        .unwrap();
    assert_eq!(quiet.context_id(), None);
    let lock = quiet.try_lock("job", "q", Duration::from_secs(5)).await.unwrap().unwrap();
    assert!(lock.is_held().await.unwrap());
}

#[wasm_bindgen(inline_js = r#"
export async function presenceHeld(name) {
  const { held } = await navigator.locks.query();
  return held.some((h) => h.name === name);
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = presenceHeld)]
    async fn presence_held(name: &str) -> JsValue;
}

#[wasm_bindgen_test]
async fn steal_takes_the_name_in_one_transaction_ahead_of_the_queue_and_the_holder_learns() {
    let name = fresh_name("steal");
    let a = IdbLocks::open(&name).await.unwrap();
    let b = IdbLocks::open(&name).await.unwrap();
    let held = a.try_lock("job", "a", Duration::from_secs(30)).await.unwrap().unwrap();
    let waiter = b.acquire("job", "w", Duration::from_secs(30)).timeout(Duration::from_secs(10));
    let steal = async {
        alkstore_mem_conformance::browser_sleep(200).await;
        let thief = b.steal("job", "thief", Duration::from_secs(30)).await.unwrap();
        assert!(thief.token() > held.token());
        assert_eq!(a.holder("job").await.unwrap().map(|l| l.owner().to_owned()).as_deref(), Some("thief"));
        assert!(!held.is_held().await.unwrap(), "the holder's lease ended");
        alkstore_mem_conformance::browser_sleep(100).await;
        let token = thief.token();
        assert!(thief.release().await.unwrap());
        assert!(!held.release().await.unwrap(), "the old holder frees nothing");
        token
    };
    let (got, thief_token) = futures_lite::future::zip(waiter, steal).await;
    let got = got.unwrap().expect("the waiter is served after the thief");
    assert_eq!(got.owner(), "w");
    assert!(got.token() > thief_token);
}

#[wasm_bindgen_test]
async fn query_lists_waiters_in_request_order_and_snapshot_by_name() {
    let name = fresh_name("order");
    let a = IdbLocks::open(&name).await.unwrap();
    let b = IdbLocks::open(&name).await.unwrap();
    let ttl = Duration::from_secs(30);
    let mut held = Vec::new();
    for n in ["a", "b", "c"] {
        held.push(a.try_lock(n, "h", ttl).await.unwrap().unwrap());
    }
    // Made in this order, from two stores: each first poll sends its first transaction.
    let made = [(&b, "b"), (&a, "a"), (&b, "c"), (&b, "a"), (&a, "b")];
    let mut waits = Vec::new();
    for (i, (store, n)) in made.iter().enumerate() {
        let mut fut = Box::pin(store.acquire(n, &format!("w{i}"), ttl));
        assert!(futures_lite::future::poll_once(&mut fut).await.is_none());
        waits.push(fut);
    }
    alkstore_mem_conformance::browser_sleep(300).await;
    let q = a.query().await.unwrap();
    let order: Vec<_> = q.waiting.iter().map(|w| (w.name(), w.owner())).collect();
    assert_eq!(order, [("b", "w0"), ("a", "w1"), ("c", "w2"), ("a", "w3"), ("b", "w4")]);
    let by_name: Vec<_> = b.snapshot().await.unwrap().waiting.iter().map(|w| w.owner().to_owned()).collect();
    assert_eq!(by_name, ["w1", "w3", "w0", "w4", "w2"]);
    let held_order: Vec<_> = q.held.iter().map(|l| l.token()).collect();
    assert!(held_order.windows(2).all(|w| w[0] < w[1]), "held in grant order");
    drop(waits);
    for lock in held {
        lock.release().await.unwrap();
    }
}
