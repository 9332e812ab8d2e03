//! Calls refused for time while the server is frozen (SIGSTOP past the `io_timeout`): once
//! it thaws and runs the requests it held, nothing is left held by no handle, and no waiter
//! is left queued.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use alkstore_kit::CommonConfig;
use alkstore_mem::LockError;

use crate::fixture::{Fixture, Server, Store, ports};
use crate::support::{fresh_scope, runtime, store_at};

/// The tests that freeze the server on [`ports::PAUSED`] take turns on it.
static PAUSED_PORT: Mutex<()> = Mutex::new(());

/// A turn on [`ports::PAUSED`] (the tests of one binary run in parallel).
pub(crate) fn paused_port() -> MutexGuard<'static, ()> {
    PAUSED_PORT.lock().unwrap_or_else(PoisonError::into_inner)
}

const TTL: Duration = Duration::from_secs(600);

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// Whether the scope holds exactly the lease on `busy` and no waiter.
async fn only_busy_is_held<F: Fixture>(locks: &Store<F>) -> bool {
    match locks.snapshot().await {
        Ok(s) => s.waiting.is_empty() && s.held.len() == 1 && s.held[0].name() == "busy",
        Err(_) => false,
    }
}

/// The server is frozen, then `try_lock`s on free names and waits (bounded and not, on a
/// free name and on a held one) are answered `Unavailable` at the `io_timeout`; the server
/// stays frozen well past it, then thaws and runs what it held. Within the kit's bounded
/// retries, no lease but the holder's and no waiter is left; the store has no sleeper left.
pub fn calls_refused_while_frozen_leave_no_lease_and_no_waiter_once_thawed<F: Fixture>(f: &F) {
    let _turn = paused_port();
    let server = f.start_server(F::FAULT_PORTS[ports::PAUSED]);
    let timeout = ms(300);
    // A long heartbeat: an entry left behind would stay visible, not expire, within the test.
    let common = CommonConfig::new()
        .with_io_timeout(timeout)
        .with_waiter_heartbeat(Duration::from_secs(60));
    runtime().block_on(async {
        let locks = store_at(f, &server.url(), &fresh_scope(), common).await;
        let holder = locks.try_lock("busy", "h", TTL).await.unwrap().unwrap();
        server.pause();
        let mut refused = Vec::new();
        for i in 0..3 {
            refused.push(locks.try_lock(&format!("t{i}"), "a", TTL).await.map(drop));
        }
        let waits = [
            ("busy", None),
            ("busy", Some(ms(100))),
            ("w0", None),
            ("w1", Some(ms(100))),
            ("w2", Some(Duration::ZERO)),
        ];
        for (name, wait) in waits {
            let acquire = locks.acquire(name, "w", TTL);
            let acquire = match wait {
                Some(wait) => acquire.timeout(wait),
                None => acquire,
            };
            refused.push(acquire.await.map(drop));
        }
        for answer in &refused {
            assert!(
                matches!(answer, Err(LockError::Unavailable { .. })),
                "{answer:?}"
            );
        }
        // Frozen well past the io_timeout: the first undo attempts fail.
        tokio::time::sleep(ms(1500)).await;
        server.resume();
        let thawed = Instant::now();
        // The undo is retried with pauses up to 2 s; the stale requests run at the thaw.
        while !only_busy_is_held::<F>(&locks).await {
            let snapshot = locks.snapshot().await;
            assert!(
                thawed.elapsed() < Duration::from_secs(30),
                "left behind 30 s after the thaw: {snapshot:?}"
            );
            tokio::time::sleep(ms(100)).await;
        }
        eprintln!(
            "SIGSTOP: {} calls refused, clean {:?} after the thaw",
            refused.len(),
            thawed.elapsed()
        );
        // And it stays clean (a late request withdrawn again after it ran).
        tokio::time::sleep(timeout * 3).await;
        assert!(
            only_busy_is_held::<F>(&locks).await,
            "{:?}",
            locks.snapshot().await
        );
        assert_eq!(locks.sleepers_for_test(), 0, "no sleeper left registered");
        assert!(holder.release().await.unwrap());
    });
}
