//! Faults, each on a server of the test's own ([`Fixture::start_server`] on one of
//! [`Fixture::FAULT_PORTS`], killed by pid when done, also on panic): a holder process killed
//! with SIGKILL, the server killed and started again, the server frozen with SIGSTOP, every
//! client session killed, a waiter process killed.

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use alkstore_kit::{CommonConfig, Lock};
use alkstore_mem::LockError;

use crate::fixture::{Fixture, Server, Store, ports};
use crate::support::{child_env, child_role, fresh_scope, io, runtime, spawn_child, store_at};

const TTL: Duration = Duration::from_secs(10);

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// The children's entry point: nothing in a normal run; with `ALKSTORE_CHILD=holder` it takes
/// a lease on `k9`, prints `held <token> <deadline ns>` and sleeps until it is killed; with
/// `ALKSTORE_CHILD=waiter` it queues for `cw` (100 ms heartbeat) until it is killed. The
/// parent passes the server (`ALKSTORE_CHILD_URL`) and the scope (`ALKSTORE_CHILD_SCOPE`).
pub fn child<F: Fixture>(f: &F) {
    let Some(role) = child_role() else { return };
    let (url, scope) = (
        child_env("ALKSTORE_CHILD_URL"),
        child_env("ALKSTORE_CHILD_SCOPE"),
    );
    if role == "waiter" {
        let common = CommonConfig::new().with_waiter_heartbeat(ms(100));
        return runtime().block_on(async {
            let locks = store_at(f, &url, &scope, common).await;
            let waiting = locks.acquire("cw", "crashing", TTL);
            tokio::pin!(waiting);
            tokio::select! {
                _ = &mut waiting => panic!("the lock is held by the parent"),
                () = tokio::time::sleep(ms(100)) => println!("queued"),
            }
            let _ = waiting.await;
        });
    }
    assert_eq!(role, "holder");
    let ttl = ms(child_env("ALKSTORE_CHILD_TTL_MS").parse().unwrap());
    runtime().block_on(async {
        let locks = store_at(f, &url, &scope, CommonConfig::new()).await;
        let lock = locks.try_lock("k9", "doomed", ttl).await.unwrap().unwrap();
        println!("held {} {}", lock.token(), lock.deadline().as_nanos());
        tokio::time::sleep(Duration::from_secs(3600)).await;
        drop(lock);
    });
}

/// A holder process killed with SIGKILL: its lease lapses at its deadline, and the head
/// waiter of another process gets it then (not before, and not much later).
pub fn a_killed_holders_lease_lapses_and_the_head_waiter_of_another_process_gets_it<F: Fixture>(
    f: &F,
) {
    let server = f.start_server(F::FAULT_PORTS[ports::KILLED_HOLDER]);
    let (ttl, scope) = (ms(1000), fresh_scope());
    let env = [
        ("ALKSTORE_CHILD_URL", server.url()),
        ("ALKSTORE_CHILD_SCOPE", scope.clone()),
        ("ALKSTORE_CHILD_TTL_MS", ttl.as_millis().to_string()),
    ];
    let mut child = spawn_child("holder", &env);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (token, deadline) = loop {
        let line = lines.next().expect("the child reports its lease").unwrap();
        if let Some(rest) = line.strip_prefix("held ") {
            let mut parts = rest.split(' ').map(|p| p.parse::<u64>().unwrap());
            break (parts.next().unwrap(), parts.next().unwrap());
        }
    };
    let reported = Instant::now();
    runtime().block_on(async {
        let locks = store_at(f, &server.url(), &scope, CommonConfig::new()).await;
        let waiter = {
            let locks = locks.clone();
            tokio::spawn(async move { locks.acquire("k9", "heir", TTL).await })
        };
        tokio::time::sleep(ms(100)).await;
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let lock = waiter.await.unwrap().unwrap().unwrap();
        let took = reported.elapsed();
        // On the server's clock: granted this long after the dead lease's deadline.
        let granted_at = lock.deadline().as_nanos() - TTL.as_nanos() as u64;
        let late = Duration::from_nanos(granted_at.saturating_sub(deadline));
        eprintln!("kill -9: the waiter got the lease {took:?} after the grant, {late:?} late");
        assert!(lock.token() > token);
        assert!(
            granted_at >= deadline,
            "never before the dead lease's deadline"
        );
        assert!(took <= ttl + ms(100), "{took:?}");
        assert!(late <= ms(100), "{late:?}");
    });
}

/// The server killed and started again: calls answer `Unavailable` promptly meanwhile, the
/// same store works again after, and tokens keep increasing (whether the data survived or
/// not: [`Fixture::RESTART_KEEPS_DATA`] says which the lease held across it shows).
pub fn a_restart_keeps_tokens_increasing_and_the_store_recovers<F: Fixture>(f: &F) {
    let mut server = f.start_server(F::FAULT_PORTS[ports::RESTART]);
    let timeout = ms(500);
    runtime().block_on(async {
        let locks = store_at(f, &server.url(), &fresh_scope(), io(timeout)).await;
        let mut before = 0;
        for i in 0..20 {
            let lock = locks
                .try_lock(&format!("r{i}"), "a", TTL)
                .await
                .unwrap()
                .unwrap();
            before = before.max(lock.token());
            if i % 2 == 0 {
                lock.release().await.unwrap();
            } else {
                lock.detach();
            }
        }
        let mut held = locks.try_lock("kept", "a", TTL).await.unwrap().unwrap();
        server.kill();
        for _ in 0..3 {
            let start = Instant::now();
            let err = locks.try_lock("r0", "b", TTL).await.unwrap_err();
            assert!(matches!(err, LockError::Unavailable { .. }), "{err:?}");
            let took = start.elapsed();
            assert!(took <= timeout + ms(100), "{took:?}");
            let holder = locks.holder("r0").await;
            assert!(matches!(holder, Err(LockError::Unavailable { .. })));
            assert!(matches!(
                held.renew(TTL).await,
                Err(LockError::Unavailable { .. })
            ));
        }
        server.launch();
        let start = Instant::now();
        let lock = loop {
            match locks.try_lock("r-new", "b", TTL).await {
                Ok(lock) => break lock.unwrap(),
                Err(err) => {
                    assert!(start.elapsed() < Duration::from_secs(5), "still {err}");
                    tokio::time::sleep(ms(20)).await;
                }
            }
        };
        eprintln!(
            "restart: first success {:?} after the server was back",
            start.elapsed()
        );
        assert!(lock.token() > before, "{} > {before}", lock.token());
        let renewed = held.renew(TTL).await;
        if F::RESTART_KEEPS_DATA {
            assert!(renewed.is_ok(), "{renewed:?}");
        } else {
            assert!(
                matches!(renewed, Err(LockError::Expired { .. })),
                "{renewed:?}"
            );
            drop(held);
        }
        let waited = locks
            .acquire("r1", "c", TTL)
            .timeout(Duration::from_secs(1))
            .await;
        let _ = waited.unwrap();
    });
}

/// The server frozen (SIGSTOP): every call answers `Unavailable` within the `io_timeout`,
/// and works again once it thaws.
pub fn a_paused_server_gives_unavailable_within_the_io_timeout<F: Fixture>(f: &F) {
    let _turn = crate::frozen::paused_port();
    let server = f.start_server(F::FAULT_PORTS[ports::PAUSED]);
    let timeout = ms(400);
    runtime().block_on(async {
        let locks = store_at(f, &server.url(), &fresh_scope(), io(timeout)).await;
        let mut lock = locks.try_lock("p", "a", TTL).await.unwrap().unwrap();
        let waiter = {
            let locks = locks.clone();
            tokio::spawn(async move { locks.acquire("p", "w", TTL).await })
        };
        tokio::time::sleep(ms(100)).await;
        server.pause();
        let mut worst = Duration::ZERO;
        for _ in 0..2 {
            let start = Instant::now();
            let err = locks.try_lock("q", "b", TTL).await.unwrap_err();
            assert!(matches!(err, LockError::Unavailable { .. }), "{err:?}");
            worst = worst.max(start.elapsed());
            let start = Instant::now();
            assert!(matches!(
                lock.renew(TTL).await,
                Err(LockError::Unavailable { .. })
            ));
            worst = worst.max(start.elapsed());
            let start = Instant::now();
            let holder = locks.holder("p").await;
            assert!(matches!(holder, Err(LockError::Unavailable { .. })));
            worst = worst.max(start.elapsed());
        }
        eprintln!("SIGSTOP: Unavailable within {worst:?} (io_timeout {timeout:?})");
        // A generous margin: the figure is printed above; a loaded machine adds its own delay.
        assert!(worst <= timeout + ms(400), "{worst:?}");
        server.resume();
        let start = Instant::now();
        while let Err(err) = lock.renew(TTL).await {
            assert!(start.elapsed() < Duration::from_secs(3), "still {err}");
            tokio::time::sleep(ms(20)).await;
        }
        assert!(lock.release().await.unwrap());
        // The waiter's step may have failed while the server was frozen; if it survived, the
        // release handed it the lease.
        let waited = tokio::time::timeout(Duration::from_secs(3), waiter).await;
        match waited.unwrap().unwrap() {
            Ok(got) => assert_eq!(got.unwrap().owner(), "w"),
            Err(err) => assert!(matches!(err, LockError::Unavailable { .. }), "{err:?}"),
        }
        // A try_lock that timed out may still run once the server thaws (it was in the
        // socket): the kit undoes it in the background (see `frozen`, which checks that).
        assert!(locks.try_lock("fresh", "b", TTL).await.unwrap().is_some());
    });
}

/// What a wait came to.
type Waited<F> = Result<Option<Lock<<F as Fixture>::Engine>>, LockError>;

/// Waits for "s" (held) with `wait` on `locks` while `server` is frozen from `from` after the
/// wait starts (before its first poll when zero) for `stall`.
fn wait_through_a_stall<F: Fixture>(
    server: &F::Server,
    locks: &Store<F>,
    wait: Duration,
    (from, stall): (Duration, Duration),
) -> (Duration, Waited<F>) {
    let rt = runtime();
    if from.is_zero() {
        server.pause();
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            if !from.is_zero() {
                std::thread::sleep(from);
                server.pause();
            }
            std::thread::sleep(stall);
            server.resume();
        });
        rt.block_on(async {
            let start = Instant::now();
            let got = locks.acquire("s", "w", TTL).timeout(wait).await;
            (start.elapsed(), got)
        })
    })
}

/// A bounded wait counts from its first poll and ends within `wait + io_timeout` however
/// long the server stays frozen.
pub fn a_bounded_wait_counts_from_its_first_poll_and_ends_within_wait_plus_io_timeout_while_frozen<
    F: Fixture,
>(
    f: &F,
) {
    let server = f.start_server(F::FAULT_PORTS[ports::STALLED_WAIT]);
    let rt = runtime();
    let scope = fresh_scope();
    let connect = |timeout| rt.block_on(store_at(f, &server.url(), &scope, io(timeout)));
    let (patient, hasty) = (connect(Duration::from_secs(3)), connect(ms(500)));
    let holder = rt
        .block_on(patient.try_lock("s", "holder", TTL))
        .unwrap()
        .unwrap();

    // A stall shorter than the wait, from the start: the wait still ends `wait` after its
    // first poll.
    let (wait, stall) = (Duration::from_secs(2), ms(1200));
    let (took, got) = wait_through_a_stall::<F>(&server, &patient, wait, (Duration::ZERO, stall));
    eprintln!("SIGSTOP {stall:?} from the start of a {wait:?} wait: resolved after {took:?}");
    assert!(matches!(got, Ok(None)), "{got:?}");
    assert!(took >= wait, "{took:?}: ended early");
    assert!(
        took < wait + ms(600),
        "{took:?}: the stall pushed the end out"
    );

    // A stall longer than the wait, from the start: the answer that comes back ends it.
    let (wait, stall) = (ms(300), ms(1500));
    let (took, got) = wait_through_a_stall::<F>(&server, &patient, wait, (Duration::ZERO, stall));
    assert!(matches!(got, Ok(None)), "{got:?}");
    assert!(took <= wait + Duration::from_secs(3), "{took:?}");

    // Queued, then a stall longer than wait + io_timeout: the wait ends at wait + io_timeout
    // all the same, saying the server did not answer.
    let (wait, timeout) = (ms(300), ms(500));
    let (took, got) = wait_through_a_stall::<F>(&server, &hasty, wait, (ms(100), ms(1500)));
    assert!(matches!(got, Err(LockError::Unavailable { .. })), "{got:?}");
    assert!(took <= wait + timeout + ms(100), "{took:?}");

    // A zero wait answers as try_lock does: Unavailable within the io_timeout.
    let stall = (Duration::ZERO, ms(1000));
    let (took, got) = wait_through_a_stall::<F>(&server, &hasty, Duration::ZERO, stall);
    assert!(matches!(got, Err(LockError::Unavailable { .. })), "{got:?}");
    assert!(took <= timeout + ms(100), "{took:?}");

    assert!(rt.block_on(holder.release()).unwrap());
}

/// Every client session killed (the wake-up one included) under a waiter: it is still served.
pub fn a_waiter_whose_sessions_are_killed_still_gets_the_lease<F: Fixture>(f: &F) {
    let server = f.start_server(F::FAULT_PORTS[ports::KILLED_SESSIONS]);
    runtime().block_on(async {
        let scope = fresh_scope();
        let holder = store_at(f, &server.url(), &scope, CommonConfig::new()).await;
        let waiting = store_at(f, &server.url(), &scope, CommonConfig::new()).await;
        let lock = holder.try_lock("ck", "a", TTL).await.unwrap().unwrap();
        let waiter = {
            let waiting = waiting.clone();
            tokio::spawn(async move { waiting.acquire("ck", "w", TTL).await })
        };
        tokio::time::sleep(ms(100)).await;
        server.kill_sessions();
        tokio::time::sleep(ms(50)).await;
        let start = Instant::now();
        // The holder's session was killed too: its release may need a retry.
        let released = match lock.release().await {
            Ok(released) => released,
            Err(_) => holder.force_release("ck").await.unwrap().is_some(),
        };
        assert!(released);
        let got = tokio::time::timeout(Duration::from_secs(3), waiter)
            .await
            .expect("the waiter is served")
            .unwrap()
            .unwrap()
            .unwrap();
        eprintln!(
            "sessions killed: the waiter got the lease {:?} after",
            start.elapsed()
        );
        assert_eq!(got.owner(), "w");
        assert!(start.elapsed() < ms(1500));
    });
}

/// A waiter process killed with SIGKILL: once its heartbeat expires, the next waiter is served.
pub fn a_crashed_unbounded_waiter_is_skipped_once_its_heartbeat_expires<F: Fixture>(f: &F) {
    let server = f.start_server(F::FAULT_PORTS[ports::CRASHED_WAITER]);
    runtime().block_on(async {
        let scope = fresh_scope();
        let locks = store_at(f, &server.url(), &scope, CommonConfig::new()).await;
        let lock = locks.try_lock("cw", "holder", TTL).await.unwrap().unwrap();
        let env = [
            ("ALKSTORE_CHILD_URL", server.url()),
            ("ALKSTORE_CHILD_SCOPE", scope.clone()),
        ];
        let mut child = spawn_child("waiter", &env);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        while lines.next().expect("the child queues").unwrap() != "queued" {}
        let waiter = {
            let locks = locks.clone();
            tokio::spawn(async move { locks.acquire("cw", "survivor", TTL).await })
        };
        tokio::time::sleep(ms(100)).await;
        child.kill().unwrap();
        child.wait().unwrap();
        let killed = Instant::now();
        assert!(lock.release().await.unwrap());
        // The lease may go to the dead child first (its entry was fresh). Once its heartbeat
        // expired (3 x 100 ms), the survivor's next step (its 1 s heartbeat at the latest)
        // takes the name.
        let got = tokio::time::timeout(Duration::from_secs(3), waiter)
            .await
            .expect("the survivor is served")
            .unwrap()
            .unwrap()
            .unwrap();
        let took = killed.elapsed();
        eprintln!("crashed waiter: the next waiter got the lease {took:?} after the kill");
        assert_eq!(got.owner(), "survivor");
        assert!(took < ms(1500), "{took:?}");
    });
}
