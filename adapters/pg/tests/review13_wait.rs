//! Issue-13 review: waiting and cancellation. A dropped acquire must leave the queue and
//! must not leave a lease behind; FIFO must hold for every acquire; a waiter that loses its
//! LISTEN connection still gets its hand-off.

mod common;
mod r13;

use std::time::{Duration, Instant};

use alkstore_pg::{PgConfig, PgLocks};
use r13::{TTL, ms};

/// An acquire dropped while its first step is still in flight (here waiting on the server
/// for the name's row, which another transaction holds `FOR UPDATE`) withdraws through
/// `cancel()`; the step runs on once that transaction ends, and would grant the lease to a
/// request nobody waits for any more. Expected: no lease on "ghost" (the acquire was
/// dropped; "dropping it withdraws the request (cancel-safe)"). (Issue 20: `try_lock`s on a
/// fenced row no longer hold the connection, so they no longer queue a step behind them.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_acquire_whose_step_is_queued_leaves_no_lease_behind() {
    let locks = common::store_with(PgConfig::new().with_pool_size(1)).await;
    let mut blocker = common::client(&common::url()).await;
    // The name's row exists, free, and another transaction holds it for a while.
    let first = locks.try_lock("ghost", "a", TTL).await.unwrap().unwrap();
    assert!(first.release().await.unwrap());
    let tx = blocker.transaction().await.unwrap();
    let row = format!(
        "SELECT 1 FROM {}.leases WHERE name = 'ghost' FOR UPDATE",
        r13::q(&locks)
    );
    assert_eq!(tx.query(&row, &[]).await.unwrap().len(), 1);
    // An acquire of the free name, given up after 30 ms (as a select! or a timeout would).
    let gave_up = tokio::time::timeout(
        ms(30),
        locks.acquire("ghost", "dropped", Duration::from_secs(3600)),
    )
    .await;
    assert!(
        gave_up.is_err(),
        "the acquire was still pending: {gave_up:?}"
    );
    tokio::time::sleep(ms(30)).await;
    tx.commit().await.unwrap();
    tokio::time::sleep(ms(300)).await;
    let holder = locks.holder("ghost").await.unwrap();
    assert_eq!(
        holder, None,
        "a dropped acquire left a lease behind (held until its ttl, nobody can release it)"
    );
}

/// The same drop at every await point, without a queue in front: the step usually reaches
/// the server first, and the withdrawal then cleans up. Checks the queue empties and no
/// lease is left, on a free name and on a held one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquires_dropped_at_any_moment_leave_nothing_behind() {
    let locks = common::store().await;
    let held = locks.try_lock("held", "h", TTL).await.unwrap().unwrap();
    for delay_us in (0..6000).step_by(250) {
        let delay = Duration::from_micros(delay_us);
        let _ = tokio::time::timeout(delay, locks.acquire("held", "w", TTL)).await;
        let free = tokio::time::timeout(delay, locks.acquire("free", "w", TTL)).await;
        if let Ok(Ok(Some(lock))) = free {
            assert!(lock.release().await.unwrap());
        }
    }
    tokio::time::sleep(ms(500)).await;
    let snapshot = locks.snapshot().await.unwrap();
    let free = locks.holder("free").await.unwrap();
    assert!(held.release().await.unwrap());
    let after = locks.holder("held").await.unwrap();
    assert!(
        snapshot.waiting.is_empty() && free.is_none() && after.is_none(),
        "dropped acquires left behind: queued {:?}, a lease on \"free\" {free:?}, the released \
         \"held\" handed to {after:?}",
        snapshot.waiting
    );
}

/// A waiting acquire dropped because its runtime shuts down (a process returning from
/// `main` while a task waits) never runs its withdrawal task: the entry stays queued until
/// its heartbeat lapses (3 s), and a release meanwhile hands the lease to it, so the live
/// waiter behind it waits seconds. Expected (as the Redis engine does, and the issue's
/// "a dropped future leaves the queue"): gone from the queue at once.
#[test]
fn an_acquire_dropped_as_its_runtime_shuts_down_leaves_the_queue() {
    let main = common::runtime();
    let locks = main.block_on(common::store());
    let holder = main
        .block_on(locks.try_lock("n", "h", TTL))
        .unwrap()
        .unwrap();
    let other = common::runtime();
    let config = PgConfig::new().with_schema(locks.config().schema());
    let waiter_store = other
        .block_on(PgLocks::connect_with(&common::url(), config))
        .unwrap();
    let s = waiter_store.clone();
    other.spawn(async move { s.acquire("n", "gone", TTL).await });
    std::thread::sleep(ms(300));
    let before = main.block_on(locks.snapshot()).unwrap();
    assert_eq!(before.waiting.len(), 1, "queued: {:?}", before.waiting);
    drop(waiter_store);
    drop(other); // the runtime shuts down; the waiting acquire is dropped with it
    let l2 = locks.clone();
    let next = main.spawn(async move { l2.acquire("n", "next", TTL).await });
    std::thread::sleep(ms(200));
    let after = main.block_on(locks.snapshot()).unwrap();
    let started = Instant::now();
    assert!(main.block_on(holder.release()).unwrap());
    let next = main
        .block_on(async { tokio::time::timeout(Duration::from_secs(10), next).await })
        .unwrap()
        .unwrap()
        .unwrap()
        .unwrap();
    let took = started.elapsed();
    drop(next);
    let owners: Vec<_> = after.waiting.iter().map(|w| w.owner()).collect();
    assert!(
        owners == ["next"] && took < ms(1000),
        "queued after the shutdown: {owners:?}; the live waiter got the lease {took:?} after \
         the release (expected: the dropped waiter gone, the hand-off at once)"
    );
}

/// Waiters that arrive while a transaction holding `fence()` is open are not queued (their
/// steps find the row locked and poll), so a `try_lock` that arrives after them takes the
/// name once the transaction ends. Expected: FIFO, "a try_lock arriving in between gets
/// None". (With the default config: 10 of 10 rounds barged in a trial run.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_that_arrived_during_a_fenced_transaction_keeps_its_turn() {
    let locks = common::store().await;
    let mut fencer = common::client(&common::url()).await;
    let mut barged = 0;
    for round in 0..5 {
        let name = format!("n{round}");
        let holder = locks.try_lock(&name, "h", TTL).await.unwrap().unwrap();
        let tx = fencer.transaction().await.unwrap();
        holder.fence(&tx).await.unwrap();
        let waiter = {
            let (locks, name) = (locks.clone(), name.clone());
            tokio::spawn(async move { locks.acquire(&name, "waiter", TTL).await })
        };
        tokio::time::sleep(ms(200)).await;
        assert!(holder.release().await.unwrap());
        tx.commit().await.unwrap();
        if let Some(rival) = locks.try_lock(&name, "rival", TTL).await.unwrap() {
            barged += 1;
            assert!(rival.release().await.unwrap());
        }
        let got = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(got.owner(), "waiter");
    }
    assert_eq!(
        barged, 0,
        "a later try_lock went before an earlier acquire in {barged} of 5 rounds"
    );
}

/// FIFO across six stores (as six processes): each queues in turn; the grants follow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_stores_are_served_in_arrival_order() {
    let locks = common::store().await;
    let held = locks.try_lock("fifo", "h", TTL).await.unwrap().unwrap();
    let mut waiting = Vec::new();
    for i in 0..6 {
        let config = PgConfig::new().with_schema(locks.config().schema());
        let store = PgLocks::connect_with(&common::url(), config).await.unwrap();
        waiting.push(tokio::spawn(async move {
            let lock = store
                .acquire("fifo", &format!("w{i}"), TTL)
                .await
                .unwrap()
                .unwrap();
            let (token, at) = (lock.token(), Instant::now());
            assert!(lock.release().await.unwrap());
            (i, token, at)
        }));
        tokio::time::sleep(ms(100)).await;
    }
    let snapshot = locks.snapshot().await.unwrap();
    let owners: Vec<_> = snapshot
        .waiting
        .iter()
        .map(|w| w.owner().to_string())
        .collect();
    assert_eq!(owners, ["w0", "w1", "w2", "w3", "w4", "w5"]);
    assert!(held.release().await.unwrap());
    let mut done = Vec::new();
    for w in waiting {
        done.push(w.await.unwrap());
    }
    done.sort_by_key(|d| d.2);
    let order: Vec<_> = done.iter().map(|d| d.0).collect();
    assert_eq!(order, [0, 1, 2, 3, 4, 5]);
    assert!(done.windows(2).all(|w| w[0].1 < w[1].1));
}

/// The store's LISTEN connection is terminated while a waiter sleeps: the hand-off's NOTIFY
/// is lost, the listener reconnects and wakes every sleeper, so the waiter still gets the
/// lease well within its heartbeat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_listen_connection_dies_still_gets_the_hand_off() {
    let locks = common::store().await;
    let admin = common::client(&common::url()).await;
    let held = locks.try_lock("l", "h", TTL).await.unwrap().unwrap();
    let waiter = {
        let locks = locks.clone();
        tokio::spawn(async move { locks.acquire("l", "w", TTL).await })
    };
    tokio::time::sleep(ms(200)).await;
    let killed = r13::terminate_listener(&admin, locks.config().schema()).await;
    assert_eq!(killed, 1, "the store's listening connection");
    let started = Instant::now();
    assert!(held.release().await.unwrap());
    let got = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .unwrap()
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(got.owner(), "w");
    assert!(started.elapsed() < ms(1500), "{:?}", started.elapsed());
}

/// A waiter queued BEFORE a fenced transaction opened: while the transaction is open its
/// steps find the row locked, so its heartbeat is not refreshed; once the transaction has
/// lasted three heartbeats the waiter counts as dead, and the holder's release skips it: a
/// `try_lock` arriving after the release takes the name. (Heartbeat 100 ms here, so a 600 ms
/// transaction does it; with the default 1 s heartbeat, any fenced transaction over 3 s.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_queued_before_a_long_fenced_transaction_keeps_its_place() {
    let config = PgConfig::new()
        .with_lock_wait(ms(1))
        .with_waiter_heartbeat(ms(100));
    let locks = common::store_with(config).await;
    let mut fencer = common::client(&common::url()).await;
    let holder = locks.try_lock("q", "h", TTL).await.unwrap().unwrap();
    let waiter = {
        let locks = locks.clone();
        tokio::spawn(async move { locks.acquire("q", "waiter", TTL).await })
    };
    tokio::time::sleep(ms(200)).await;
    let queued = locks.snapshot().await.unwrap().waiting;
    assert_eq!(queued.len(), 1, "{queued:?}");
    let tx = fencer.transaction().await.unwrap();
    holder.fence(&tx).await.unwrap();
    tokio::time::sleep(ms(600)).await;
    tx.commit().await.unwrap();
    assert!(holder.release().await.unwrap());
    let rival = locks.try_lock("q", "rival", TTL).await.unwrap();
    let rival_won = rival.is_some();
    drop(rival);
    let got = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .unwrap()
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(got.owner(), "waiter");
    assert!(
        !rival_won,
        "a try_lock after the release took the name before the waiter queued ahead of it"
    );
}
