//! `snapshot()` answers for a schema far larger than one statement reads within the
//! `io_timeout` (issue 20): it reads the schema in pages, keyset by name (waiters by name and
//! arrival), each page its own statement. 300,000 live leases and 3,000 waiters, written
//! straight into the tables, with the default 2 s `io_timeout` (one unpaged statement gave
//! `Unavailable` at 2 s on the first call).

mod common;

use std::time::{Duration, Instant};

const LEASES: i64 = 300_000;
const WAITERS: i64 = 3_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_of_300k_leases_answers_in_pages() {
    let locks = common::store().await;
    let q = format!("\"{}\"", locks.config().schema());
    let client = common::client(&common::url()).await;
    // Live for an hour on the server's clock; a long name among them (keyed by its digest).
    let long = "L".repeat(2100);
    client
        .batch_execute(&format!(
            "SET statement_timeout = 0;
             INSERT INTO {q}.leases (name, owner, token, deadline, ttl, req, claimed, seen)
             SELECT 'snap/' || lpad(i::text, 7, '0'), 'owner-' || i, i,
                    (extract(epoch FROM clock_timestamp()) * 1000000)::bigint + 3600000000,
                    3600000000, 'r' || i, true, 0
               FROM generate_series(1, {LEASES}) i;
             INSERT INTO {q}.leases (name, long_name, owner, token, deadline, ttl, req, claimed,
                                     seen)
             VALUES ({q}._k('{long}'), '{long}', 'long-owner', {LEASES} + 1,
                     (extract(epoch FROM clock_timestamp()) * 1000000)::bigint + 3600000000,
                     3600000000, 'rl', true, 0);
             INSERT INTO {q}.waiters (id, name, arrival, owner, ttl, wd, hb)
             SELECT 'w' || i, 'snap/' || lpad((1 + i % 3)::text, 7, '0'), {WAITERS} - i,
                    'waiter-' || i, 1000000, 0,
                    (extract(epoch FROM clock_timestamp()) * 1000000)::bigint + 3600000000
               FROM generate_series(1, {WAITERS}) i;
             SELECT setval('{q}.tokens', {LEASES} + 2);
             ANALYZE {q}.leases; ANALYZE {q}.waiters;"
        ))
        .await
        .unwrap();

    let t = Instant::now();
    let snapshot = locks.snapshot().await.expect("the snapshot answers");
    let took = t.elapsed();
    println!(
        "snapshot of {} leases and {} waiters: {took:?} (io_timeout 2 s, one page per statement)",
        snapshot.held.len(),
        snapshot.waiting.len()
    );
    assert_eq!(snapshot.held.len() as i64, LEASES + 1);
    assert_eq!(snapshot.waiting.len() as i64, WAITERS);
    // In name order, every lease once, the long name whole.
    assert!(snapshot.held.windows(2).all(|w| w[0].name() < w[1].name()));
    assert_eq!(snapshot.held[0].name(), long);
    assert_eq!(snapshot.held[0].owner(), "long-owner");
    let first = &snapshot.held[1];
    assert_eq!((first.name(), first.owner()), ("snap/0000001", "owner-1"));
    assert_eq!(first.token(), 1);
    let last = snapshot.held.last().unwrap();
    assert_eq!(last.name(), format!("snap/{LEASES:07}"));
    // Waiters by name, then in the order they will be served (arrival: the largest i first).
    assert!(
        snapshot
            .waiting
            .windows(2)
            .all(|w| w[0].name() <= w[1].name())
    );
    let on_first: Vec<_> = snapshot
        .waiting
        .iter()
        .filter(|w| w.name() == "snap/0000001")
        .map(|w| w.owner().to_string())
        .collect();
    assert_eq!(on_first.len() as i64, WAITERS / 3);
    assert_eq!(on_first[0], format!("waiter-{WAITERS}"));
    assert_eq!(on_first.last().unwrap(), "waiter-3");

    // The engine still works on the same names.
    assert!(
        locks
            .try_lock("snap/0000005", "x", Duration::from_secs(5))
            .await
            .unwrap()
            .is_none()
    );
    let lock = locks
        .try_lock("snap/free", "x", Duration::from_secs(5))
        .await
        .unwrap()
        .unwrap();
    assert!(lock.release().await.unwrap());
}
