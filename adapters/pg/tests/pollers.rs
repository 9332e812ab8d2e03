//! Pollers on a fenced name do not starve unrelated names (issue 20): with 64 tasks calling
//! `try_lock` in a loop on a name whose row a user's transaction holds with `fence()`,
//! `holder()` and `renew` on other names keep answering, and a `keep_alive` on another name
//! (ttl 4 s, the least a 2 s `io_timeout` allows) keeps its lease. Before, every poller held a
//! pooled connection for the whole lock wait and the calls pipelined behind it waited: a
//! `holder()` took 2 s or failed, and the `keep_alive` lost its lease. The latencies, loaded
//! against unloaded in the same run, are printed (a loaded 2-core machine makes them no
//! assertion); what is asserted is that every call answered and no lease was lost.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use alkstore_pg::PgLocks;

const POLLERS: usize = 64;

/// The median and the largest of `samples`.
fn median_max(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    (samples[samples.len() / 2], samples[samples.len() - 1])
}

/// `holder()` and `renew()` latencies over `rounds` rounds, every call's error kept.
async fn sample(
    locks: &PgLocks,
    renewed: &mut alkstore_pg::PgLock,
    rounds: usize,
) -> (Vec<Duration>, Vec<Duration>, Vec<String>) {
    let (mut holder, mut renew, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = Instant::now();
        match locks.holder("poll/other").await {
            Ok(Some(_)) => holder.push(t.elapsed()),
            other => errors.push(format!("holder: {other:?}")),
        }
        let t = Instant::now();
        match renewed.renew(Duration::from_secs(30)).await {
            Ok(()) => renew.push(t.elapsed()),
            Err(e) => errors.push(format!("renew: {e}")),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (holder, renew, errors)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pollers_on_a_fenced_name_do_not_starve_other_names() {
    let locks = common::store().await;
    let ttl = Duration::from_secs(30);
    let fenced = locks
        .try_lock("poll/fenced", "f", ttl)
        .await
        .unwrap()
        .unwrap();
    let _other = locks
        .try_lock("poll/other", "o", ttl)
        .await
        .unwrap()
        .unwrap();
    let mut renewed = locks
        .try_lock("poll/renewed", "r", ttl)
        .await
        .unwrap()
        .unwrap();
    let kept = locks
        .try_lock("poll/kept", "k", Duration::from_secs(4))
        .await
        .unwrap()
        .unwrap();

    // Unloaded.
    let (h0, r0, errors) = sample(&locks, &mut renewed, 30).await;
    assert!(errors.is_empty(), "{errors:?}");

    // A user's transaction holds the fence on poll/fenced for the whole run.
    let mut user = common::client(&common::url()).await;
    let tx = user.transaction().await.unwrap();
    fenced.fence(&tx).await.unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let (polls, granted) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let pollers: Vec<_> = (0..POLLERS)
        .map(|_| {
            let (locks, stop) = (locks.clone(), Arc::clone(&stop));
            let (polls, granted) = (Arc::clone(&polls), Arc::clone(&granted));
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(Some(_)) = locks.try_lock("poll/fenced", "p", ttl).await {
                        granted.fetch_add(1, Ordering::Relaxed);
                    }
                    polls.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Loaded: the keep-alive renews every 500 ms while the samples run (about 5 s).
    let loaded = async {
        let out = sample(&locks, &mut renewed, 100).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        out
    };
    let (h1, r1, errors) = tokio::select! {
        out = loaded => out,
        lost = kept.keep_alive(Duration::from_millis(500)) => {
            panic!("the keep-alive on another name lost its lease under the pollers: {lost}")
        }
    };
    stop.store(true, Ordering::Relaxed);
    for poller in pollers {
        poller.await.unwrap();
    }
    tx.rollback().await.unwrap();
    assert!(errors.is_empty(), "calls on other names failed: {errors:?}");
    assert_eq!(
        granted.load(Ordering::Relaxed),
        0,
        "the fenced name was granted"
    );
    assert!(kept.is_held().await.unwrap(), "the kept lease is lost");
    assert!(fenced.release().await.unwrap());

    let ((h0m, h0x), (h1m, h1x)) = (median_max(h0), median_max(h1));
    let ((r0m, r0x), (r1m, r1x)) = (median_max(r0), median_max(r1));
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    println!(
        "{POLLERS} pollers on a fenced name ({} polls): holder() on another name median {h0m:?} \
         -> {h1m:?} ({:.2}x), max {h0x:?} -> {h1x:?}; renew median {r0m:?} -> {r1m:?} ({:.2}x), \
         max {r0x:?} -> {r1x:?}; keep_alive kept its lease",
        polls.load(Ordering::Relaxed),
        ratio(h1m, h0m),
        ratio(r1m, r0m),
    );
}
