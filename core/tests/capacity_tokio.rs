//! Issue 14 under tokio's paused time: an `acquire` without a timeout, on a registry capped
//! by `Config::with_max_locks`, whose hand-off lapsed uncollected while another name
//! competed for the room, must resolve once room frees, with nobody else touching its name.
//! A generous guard timeout (paused time: it costs nothing) turns a hang into a failure. The
//! waiter runs as a task of its own, so that the guard firing does not poll it (a
//! `timeout` around the future itself polls it once more when it fires, which would hide
//! a waiter that nothing wakes).

use std::time::Duration;

use alkstore_mem::{Clock, Config, Lock, LockRegistry, Timer, Timestamp};
use futures_lite::future::poll_once;
use tokio::time::{Instant, Sleep};

/// The core's clock on tokio time (what `alkstore-mem-tokio`'s `TokioClock` does; the
/// core cannot depend on its adapter).
#[derive(Clone, Copy, Debug)]
struct Tokio(Instant);

impl Clock for Tokio {
    fn now(&self) -> Timestamp {
        Timestamp::from_nanos(u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
}

impl Timer for Tokio {
    type Sleep = Sleep;

    fn sleep_until(&self, deadline: Timestamp) -> Sleep {
        let at = (self.0.checked_add(deadline.as_duration()))
            .unwrap_or_else(|| self.0 + Duration::from_secs(86_400 * 365 * 30));
        tokio::time::sleep_until(at)
    }
}

const GUARD: Duration = Duration::from_secs(24 * 3600);

/// Room for one lease; "x" handed to an unbounded waiter that does not collect it before it
/// lapses; then "y" asks for the room. Returns the registry, the waiter and whatever "y" got.
async fn lost_hand_off_then_another_name() -> (
    LockRegistry<Tokio>,
    alkstore_mem::Acquire<Tokio>,
    Option<Lock<Tokio>>,
) {
    let registry =
        LockRegistry::with_config(Tokio(Instant::now()), Config::new().with_max_locks(1));
    let holder = registry
        .try_lock("x", "a", Duration::from_millis(100))
        .unwrap()
        .unwrap();
    let mut waiter = registry.acquire("x", "w", Duration::from_millis(100));
    assert!(poll_once(&mut waiter).await.is_none(), "queued behind a");
    holder.release(); // handed to the waiter, which is not polled again yet
    tokio::time::advance(Duration::from_secs(1)).await; // the hand-off lapses uncollected
    let other = registry
        .try_lock("y", "b", Duration::from_millis(500))
        .ok()
        .flatten();
    (registry, waiter, other)
}

/// The room frees when "y" lapses (or was never given: the waiter kept its room).
#[tokio::test(start_paused = true)]
async fn an_unbounded_acquire_resolves_once_room_frees_by_a_lapse() {
    let (_registry, waiter, other) = lost_hand_off_then_another_name().await;
    if let Some(other) = other {
        other.detach();
    }
    let lock = tokio::time::timeout(GUARD, tokio::spawn(waiter))
        .await
        .expect("the acquire never resolved: a forgotten waiter")
        .unwrap()
        .unwrap()
        .expect("unbounded: granted");
    assert_eq!((lock.name(), lock.owner()), ("x", "w"));
    assert!(lock.is_held());
}

/// The room frees when another task releases "y" (or was never given).
#[tokio::test(start_paused = true)]
async fn an_unbounded_acquire_resolves_once_room_frees_by_a_release() {
    let (registry, waiter, other) = lost_hand_off_then_another_name().await;
    let releaser = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if let Some(other) = other {
            other.release();
        }
    });
    let lock = tokio::time::timeout(GUARD, tokio::spawn(waiter))
        .await
        .expect("the acquire never resolved: a forgotten waiter")
        .unwrap()
        .unwrap()
        .expect("unbounded: granted");
    assert_eq!((lock.name(), lock.owner()), ("x", "w"));
    releaser.await.unwrap();
    assert_eq!(registry.waiters(), 0);
}
