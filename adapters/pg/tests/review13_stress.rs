//! Issue-13 review: many clients at once. Exclusion and token order on one name and across
//! names with every grant path mixed in (dropped acquires included); fenced writes committing
//! in token order while an operator force-releases and leases lapse; the holder's renew and
//! release under a storm of try_locks; rows left behind.

mod common;
mod r13;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alkstore_mem::LockError;
use alkstore_pg::{PgConfig, PgLocks};
use r13::{TTL, ms};

async fn stores(schema: &str, n: usize) -> Vec<PgLocks> {
    let mut out = Vec::new();
    for _ in 0..n {
        let config = PgConfig::new().with_schema(schema).with_pool_size(1);
        out.push(PgLocks::connect_with(&common::url(), config).await.unwrap());
    }
    out
}

/// 16 clients (own connections each) on 4 names, 60 cycles: try_lock, unbounded and bounded
/// acquire, zero-wait acquire, and acquires given up by a timeout at once. Per name, the
/// enter/exit log shows no overlap and increasing tokens; tokens are unique in the schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_clients_on_four_names_exclusion_and_token_order() {
    let schema = common::fresh_schema();
    let log = Arc::new(Mutex::new(Vec::<(String, bool, u64)>::new()));
    let mut tasks = Vec::new();
    for (c, locks) in stores(&schema, 16).await.into_iter().enumerate() {
        let log = Arc::clone(&log);
        tasks.push(tokio::spawn(async move {
            let ttl = Duration::from_secs(3);
            for cycle in 0..60usize {
                let name = format!("n{}", (c + cycle) % 4);
                let got = match (c + cycle) % 5 {
                    0 => locks.try_lock(&name, "o", ttl).await.unwrap(),
                    1 => locks
                        .acquire(&name, "o", ttl)
                        .timeout(ms(300))
                        .await
                        .unwrap(),
                    2 => locks
                        .acquire(&name, "o", ttl)
                        .timeout(Duration::ZERO)
                        .await
                        .unwrap(),
                    3 => match tokio::time::timeout(ms(2), locks.acquire(&name, "o", ttl)).await {
                        Ok(r) => r.unwrap(),
                        Err(_) => None,
                    },
                    _ => locks
                        .acquire(&name, "o", ttl)
                        .timeout(ms(1500))
                        .await
                        .unwrap(),
                };
                let Some(lock) = got else { continue };
                log.lock().unwrap().push((name.clone(), true, lock.token()));
                log.lock()
                    .unwrap()
                    .push((name.clone(), false, lock.token()));
                assert!(lock.release().await.unwrap(), "released while live");
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let log = log.lock().unwrap();
    let mut inside: HashMap<&str, Option<u64>> = HashMap::new();
    let mut last: HashMap<&str, u64> = HashMap::new();
    let mut all = Vec::new();
    for (name, enter, token) in log.iter() {
        let slot = inside.entry(name).or_default();
        if *enter {
            assert_eq!(*slot, None, "{name}: {token} entered inside {slot:?}");
            let prev = last.insert(name, *token).unwrap_or(0);
            assert!(*token > prev, "{name}: token {token} after {prev}");
            *slot = Some(*token);
            all.push(*token);
        } else {
            *slot = None;
        }
    }
    let grants = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), grants, "a token was handed out twice");
    assert!(grants > 200, "only {grants} grants");
}

/// Fencing end to end: 12 clients on 3 names write (name, token) rows inside fenced
/// transactions, sometimes stalling past a 60 ms ttl, while an operator force-releases names
/// every 15 ms. Every write that commits passed fence() with a live token, so per name the
/// rows in commit order carry non-decreasing tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_writes_commit_in_token_order_under_force_release_and_lapses() {
    let schema = common::fresh_schema();
    let locks = stores(&schema, 12).await;
    let setup = common::client(&common::url()).await;
    let table = format!("\"{schema}\".guarded");
    setup
        .batch_execute(&format!(
            "CREATE TABLE {table} (seq bigserial PRIMARY KEY, name text, token bigint)"
        ))
        .await
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (refused, committed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let operator = {
        let (locks, stop) = (locks[0].clone(), Arc::clone(&stop));
        tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let _ = locks.force_release(&format!("g{}", i % 3)).await;
                i += 1;
                tokio::time::sleep(ms(15)).await;
            }
        })
    };
    let mut tasks = Vec::new();
    for (c, locks) in locks.into_iter().enumerate() {
        let (table, refused, committed) =
            (table.clone(), Arc::clone(&refused), Arc::clone(&committed));
        tasks.push(tokio::spawn(async move {
            let mut client = common::client(&common::url()).await;
            for cycle in 0..40usize {
                let name = format!("g{}", (c + cycle) % 3);
                let Some(lock) = locks
                    .acquire(&name, "o", ms(60))
                    .timeout(ms(400))
                    .await
                    .unwrap()
                else {
                    continue;
                };
                let token = i64::try_from(lock.token()).unwrap();
                if cycle % 4 == 0 {
                    tokio::time::sleep(ms(70)).await; // past the ttl before the write
                }
                let tx = client.transaction().await.unwrap();
                if lock.fence(&tx).await.is_err() {
                    refused.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let insert = format!("INSERT INTO {table} (name, token) VALUES ($1, $2)");
                tx.execute(&insert, &[&name, &token]).await.unwrap();
                if cycle % 5 == 0 {
                    tokio::time::sleep(ms(80)).await; // the lease lapses inside the transaction
                }
                tx.execute(&insert, &[&name, &token]).await.unwrap();
                tx.commit().await.unwrap();
                committed.fetch_add(1, Ordering::Relaxed);
                let _ = lock.release().await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    operator.await.unwrap();
    let rows = setup
        .query(
            &format!("SELECT name, token FROM {table} ORDER BY seq"),
            &[],
        )
        .await
        .unwrap();
    let mut last: HashMap<String, i64> = HashMap::new();
    for row in &rows {
        let (name, token): (String, i64) = (row.get(0), row.get(1));
        let prev = last.insert(name.clone(), token).unwrap_or(0);
        assert!(
            token >= prev,
            "{name}: a write with token {token} committed after {prev}'s"
        );
    }
    let (refused, committed) = (
        refused.load(Ordering::Relaxed),
        committed.load(Ordering::Relaxed),
    );
    eprintln!(
        "fenced writes: {committed} committed, {refused} refused, {} rows",
        rows.len()
    );
    assert!(
        committed > 20 && refused > 0,
        "{committed} committed, {refused} refused"
    );
}

/// The holder renews 100 times and then releases while 16 other clients spin try_lock on
/// its name (each takes the row FOR UPDATE for a moment). Busy must be `Ok(None)` for them,
/// and the holder's renewals and release must not fail on a healthy server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_lock_storm_does_not_fail_the_holders_renew_or_release() {
    let schema = common::fresh_schema();
    let holder_store = stores(&schema, 1).await.pop().unwrap();
    let mut lock = holder_store
        .try_lock("hot", "h", TTL)
        .await
        .unwrap()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let spinner_errors = Arc::new(Mutex::new(Vec::<LockError>::new()));
    let mut spinners = Vec::new();
    for locks in stores(&schema, 16).await {
        let (stop, errors) = (Arc::clone(&stop), Arc::clone(&spinner_errors));
        spinners.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                match locks.try_lock("hot", "s", TTL).await {
                    Ok(None) => {}
                    Ok(Some(lock)) => {
                        assert!(stop.load(Ordering::Relaxed), "granted while held");
                        drop(lock);
                    }
                    Err(e) => errors.lock().unwrap().push(e),
                }
            }
        }));
    }
    tokio::time::sleep(ms(200)).await;
    let mut renew_errors = Vec::new();
    for _ in 0..100 {
        if let Err(e) = lock.renew(TTL).await {
            renew_errors.push(e);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let released = lock.release().await;
    for s in spinners {
        s.await.unwrap();
    }
    let spinner_errors = spinner_errors.lock().unwrap();
    assert!(
        renew_errors.is_empty() && released.is_ok() && spinner_errors.is_empty(),
        "renew errors {} (first {:?}), release {released:?}, try_lock errors {} (first {:?})",
        renew_errors.len(),
        renew_errors.first(),
        spinner_errors.len(),
        spinner_errors.first()
    );
}

/// A waiter that died (its process killed: no cancel) on a name nobody uses again: the
/// lease lapses, and a minute on, the sweep that "deletes rows unused for a minute every
/// 30 s" must have removed the name's rows. The `waiting` flag (and, for a hand-off never
/// picked up, `claimed = false`) keeps them for ever. Takes 35 s of real time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_of_a_dead_waiters_name_are_swept() {
    let locks = common::store().await;
    let client = common::client(&common::url()).await;
    let acquire = format!(
        "SELECT {}.acquire($1, 'dead', 1000000, $2, -1, -1, $3)",
        r13::q(&locks)
    );
    // "queued": a dead waiter behind a lease that lapses (its heartbeat 1 µs: dead at once).
    locks
        .try_lock("queued", "h", ms(1000))
        .await
        .unwrap()
        .unwrap()
        .detach();
    client
        .execute(&acquire, &[&"queued", &"dead-1", &1i64])
        .await
        .unwrap();
    // "handed": a waiter handed the lease by a release, which then dies before picking it up.
    let h = locks
        .try_lock("handed", "h", ms(1000))
        .await
        .unwrap()
        .unwrap();
    client
        .execute(&acquire, &[&"handed", &"dead-2", &2_000_000i64])
        .await
        .unwrap();
    assert!(h.release().await.unwrap());
    locks
        .advance_test_clock(Duration::from_secs(120))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(35)).await;
    let mut left = Vec::new();
    for name in ["queued", "handed"] {
        for table in ["leases", "waiters"] {
            left.push((
                name,
                table,
                r13::rows_for(&client, &locks, table, name).await,
            ));
        }
    }
    assert!(
        left.iter().all(|l| l.2 == 0),
        "rows left after the sweep: {left:?}"
    );
}

/// Takeovers of lapsed leases (ttl 1-2 ms) by 16 clients at once, through try_lock, acquire
/// and hand-offs: grants are serialized by the row lock, so in token order their grant times
/// (deadline - ttl, on the name's never-back clock) never go back. A token taken before the
/// row lock would show as a larger grant time with a smaller token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_follow_grant_time_through_takeovers_of_lapsed_leases() {
    let schema = common::fresh_schema();
    let grants = Arc::new(Mutex::new(Vec::<(u64, u64)>::new()));
    let mut tasks = Vec::new();
    for (c, locks) in stores(&schema, 16).await.into_iter().enumerate() {
        let grants = Arc::clone(&grants);
        tasks.push(tokio::spawn(async move {
            for cycle in 0..80usize {
                let ttl = Duration::from_micros(1000 + 1000 * ((c + cycle) % 2) as u64);
                let got = match (c + cycle) % 3 {
                    0 => locks.try_lock("lapse", "o", ttl).await.unwrap(),
                    1 => locks
                        .acquire("lapse", "o", ttl)
                        .timeout(ms(50))
                        .await
                        .unwrap(),
                    _ => locks
                        .acquire("lapse", "o", ttl)
                        .timeout(Duration::ZERO)
                        .await
                        .unwrap(),
                };
                let Some(lock) = got else { continue };
                let granted_at = lock.deadline().as_nanos() - ttl.as_nanos() as u64;
                grants.lock().unwrap().push((lock.token(), granted_at));
                if cycle % 2 == 0 {
                    let _ = lock.release().await.unwrap();
                } else {
                    lock.detach();
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let mut grants = grants.lock().unwrap().clone();
    grants.sort_unstable();
    let back: Vec<_> = grants.windows(2).filter(|w| w[1].1 < w[0].1).collect();
    eprintln!("{} grants of a lapsing name", grants.len());
    // Enough grants for the order to say something; how many depends on the machine
    // (213-398 on a loaded 2-core machine, more on an idle one).
    assert!(grants.len() > 100, "{}", grants.len());
    assert!(
        back.is_empty(),
        "a larger token was granted earlier: {:?}",
        &back[..back.len().min(5)]
    );
}
