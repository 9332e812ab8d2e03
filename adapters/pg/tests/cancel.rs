//! Cancel safety on PostgreSQL (issue 22): the shared suite (`alkstore-kit-harness`: calls
//! dropped at random points leave no lease and no waiter held by no handle; a thousand dropped
//! calls open no new sessions, counted by `pg_stat_database` on a cluster of the test's own),
//! then the issue's own measurements on the shared cluster, with PostgreSQL's default pool and
//! io_timeout: a caller that stops waiting never throws a pooled connection away, since the
//! kit runs the call on to its end in a task of its own. Each of these runs in a database of its own, so that
//! `pg_stat_database.sessions` counts this store's sessions only.

mod common;

alkstore_kit_harness::cancel_tests!(common::Fixture);

use std::time::{Duration, Instant};

use alkstore_pg::{PgConfig, PgLocks};

/// A database of its own (dropped at the end) and its URL.
struct Scratch {
    admin: tokio_postgres::Client,
    name: String,
    url: String,
}

impl Scratch {
    async fn new(tag: &str) -> Scratch {
        let admin = common::client(&common::url()).await;
        let name = format!("{tag}_{}", std::process::id());
        admin
            .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .await
            .unwrap();
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        let base = common::url();
        let (server, _) = base.rsplit_once('/').unwrap();
        let url = format!("{server}/{name}");
        Scratch { admin, name, url }
    }

    /// The sessions ever opened on the database, once the backends have flushed their stats.
    async fn sessions(&self) -> i64 {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        self.admin
            .query_one(
                "SELECT sessions FROM pg_stat_database WHERE datname = $1",
                &[&self.name],
            )
            .await
            .unwrap()
            .get(0)
    }

    async fn drop_database(self) {
        self.admin
            .batch_execute(&format!("DROP DATABASE {} WITH (FORCE)", self.name))
            .await
            .unwrap();
    }
}

/// A pseudo-random number below `n` for step `i` (no rand crate: a multiplicative hash).
fn spread(i: u64, n: u64) -> u64 {
    (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 33) % n
}

/// Waits (up to 10 s) until the schema holds no lease and no waiter.
async fn settled(locks: &PgLocks) -> alkstore_mem::Snapshot {
    let started = Instant::now();
    loop {
        let snapshot = locks.snapshot().await.unwrap();
        if (snapshot.held.is_empty() && snapshot.waiting.is_empty())
            || started.elapsed() > Duration::from_secs(10)
        {
            return snapshot;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_dropped_try_locks_open_no_new_sessions_and_leave_no_lease() {
    let scratch = Scratch::new("cancel_try").await;
    let config = PgConfig::new().with_schema(common::fresh_schema());
    let pool = config.pool_size() as i64;
    let locks = PgLocks::connect_with(&scratch.url, config).await.unwrap();
    let before = scratch.sessions().await;
    let (mut dropped, mut granted) = (0, 0);
    // Until a thousand were dropped before their answer (at most 5,000 calls).
    let mut i = 0_u64;
    while dropped < 1000 && i < 5000 {
        let name = format!("n{}", i % 20);
        let call = locks.try_lock(&name, "o", Duration::from_secs(60));
        let answer = if i % 2 == 0 {
            // Every other one right after its first poll (the call is sent, not answered).
            let mut call = std::pin::pin!(call);
            let first = std::future::poll_fn(|cx| {
                std::task::Poll::Ready(std::future::Future::poll(call.as_mut(), cx))
            });
            match first.await {
                std::task::Poll::Ready(answer) => Some(answer),
                std::task::Poll::Pending => None,
            }
        } else {
            let tiny = Duration::from_micros(spread(i, 300));
            tokio::time::timeout(tiny, call).await.ok()
        };
        match answer {
            None => dropped += 1,
            // Dropped at once: released.
            Some(answer) => granted += usize::from(answer.unwrap().is_some()),
        }
        i += 1;
    }
    assert_eq!(
        dropped, 1000,
        "only {dropped} of {i} calls were dropped mid-flight"
    );
    let left = settled(&locks).await;
    assert!(
        left.held.is_empty(),
        "{dropped} dropped try_locks ({granted} answered with a grant) left leases held by \
         no handle: {:?}",
        left.held
    );
    let opened = scratch.sessions().await - before;
    eprintln!("{dropped} try_locks dropped mid-flight ({granted} granted): {opened} new sessions");
    assert!(
        opened <= pool,
        "{dropped} dropped try_locks opened {opened} new sessions (pool of {pool})"
    );
    drop(locks);
    scratch.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_timeouts_on_acquire_leave_an_unrelated_keep_alive_its_lease() {
    let scratch = Scratch::new("cancel_acq").await;
    let config = PgConfig::new().with_schema(common::fresh_schema());
    let pool = config.pool_size() as i64;
    let locks = PgLocks::connect_with(&scratch.url, config).await.unwrap();
    // The listener opens with the first waiter: start it before counting.
    let busy = locks
        .try_lock("busy", "holder", Duration::from_secs(60))
        .await
        .unwrap()
        .unwrap();
    let warm = locks
        .acquire("busy", "w", Duration::from_secs(5))
        .timeout(Duration::from_millis(50))
        .await
        .unwrap();
    assert!(warm.is_none());
    let before = scratch.sessions().await;
    // 10 s: with 4 s, on a loaded machine (make test's suites side by side), a renewal once
    // queued past it behind the dropped acquires' withdrawals.
    let kept = locks
        .try_lock("kept", "k", Duration::from_secs(10))
        .await
        .unwrap()
        .unwrap();
    let tasks: Vec<_> = (0..10_u64)
        .map(|t| {
            let locks = locks.clone();
            tokio::spawn(async move {
                let started = Instant::now();
                let mut i = t;
                let mut timed_out = 0;
                while started.elapsed() < Duration::from_secs(6) {
                    let wait = Duration::from_millis(spread(i, 31));
                    let call = locks.acquire("busy", "w", Duration::from_secs(5));
                    match tokio::time::timeout(wait, call).await {
                        Err(_) => timed_out += 1,
                        Ok(answer) => assert!(answer.unwrap().is_none(), "busy is held"),
                    }
                    i += 10;
                }
                timed_out
            })
        })
        .collect();
    let work = async {
        let mut timed_out = 0;
        for task in tasks {
            timed_out += task.await.unwrap();
        }
        timed_out
    };
    let timed_out = tokio::select! {
        lost = kept.keep_alive(Duration::ZERO) => panic!("keep_alive lost its lease: {lost:?}"),
        n = work => n,
    };
    assert!(timed_out > 100, "only {timed_out} acquires timed out");
    assert!(kept.is_held().await.unwrap());
    assert!(kept.release().await.unwrap(), "the kept lease was live");
    assert!(busy.release().await.unwrap());
    let left = settled(&locks).await;
    assert!(
        left.held.is_empty() && left.waiting.is_empty(),
        "left behind: {left:?}"
    );
    let opened = scratch.sessions().await - before;
    eprintln!("{timed_out} acquires timed out: {opened} new sessions, the keep-alive held");
    assert!(
        opened <= pool,
        "{timed_out} timed-out acquires opened {opened} new sessions (pool of {pool})"
    );
    assert_eq!(locks.sleepers_for_test(), 0);
    drop(locks);
    scratch.drop_database().await;
}
