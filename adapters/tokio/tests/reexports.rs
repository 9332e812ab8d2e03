//! This crate is all a tokio user needs: every type of the core, and every future a lock
//! hands out, is nameable through it (0.2 lacked `KeepAlive` and `Lapsed`).

use std::time::Duration;

use alkstore_mem_tokio::{
    Fence, KeepAlive, Lapsed, LockError, LockOptions, LockRegistry, StaleToken, TokioAcquire,
    TokioClock, TokioKeepAlive, TokioLapsed, TokioLock, with_lock,
};

/// A guard a service might keep in a struct: the lock and its futures, by name.
struct Guarded<'a> {
    lock: &'a TokioLock,
    alive: TokioKeepAlive<'a>,
    lapsed: TokioLapsed<'a>,
}

fn send<T: Send>(_: &T) {}

#[tokio::test(start_paused = true)]
async fn every_future_and_helper_is_named_through_this_crate() {
    let registry = LockRegistry::new(TokioClock::new());
    let acquire: TokioAcquire = registry.acquire("job", "a", Duration::from_secs(3));
    let lock = acquire.await.unwrap().unwrap();
    {
        let guard = Guarded {
            lock: &lock,
            alive: lock.keep_alive(Duration::from_secs(1)),
            lapsed: lock.lapsed(),
        };
        send(&guard.alive);
        send(&guard.lapsed);
        let held = guard.lock;
        let (alive, lapsed): (KeepAlive<'_, TokioClock>, Lapsed<'_, TokioClock>) =
            (guard.alive, guard.lapsed);
        tokio::select! {
            lost = alive => panic!("{lost}"),
            why = lapsed => panic!("{why}"),
            () = tokio::time::sleep(Duration::from_secs(10)) => {}
        }
        assert!(held.is_held(), "kept alive for 10 s on a 3 s lease");
    }

    let fence = Fence::new();
    assert!(fence.check(lock.token()).is_ok());
    let stale: StaleToken = fence.check(0).unwrap_err();
    assert_eq!(stale.highest, lock.token());
    drop(lock);

    let options = LockOptions::ttl(Duration::from_secs(3)).wait(Duration::ZERO);
    let ran: Result<Option<u64>, LockError> =
        with_lock(&registry, "job", "b", options, |lease| async move {
            lease.token()
        })
        .await;
    assert_eq!(ran, Ok(Some(2)));
}
