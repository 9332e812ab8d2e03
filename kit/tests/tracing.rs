//! A tracing subscriber that panics on every event of the kit's: each call unwinds in its
//! caller, and nothing is left held by no handle (a grant whose event panics is released by
//! its handle's drop; a waiter whose event panics is withdrawn).

mod model;

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures_lite::FutureExt;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Panics on every event of the core's target.
struct Panicking;

impl Subscriber for Panicking {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == "alkstore"
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {
        panic!("the subscriber panics");
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Whether `fut` panicked.
async fn panics<F: std::future::Future>(fut: F) -> bool {
    AssertUnwindSafe(fut).catch_unwind().await.is_err()
}

#[tokio::test(start_paused = true)]
async fn a_subscriber_that_panics_leaves_nothing_held() {
    let _guard = tracing::subscriber::set_default(Panicking);
    let locks = model::store_with(Duration::from_secs(1), None).await;
    let ttl = Duration::from_secs(600);
    // A grant's event panics: the handle's drop releases it.
    assert!(panics(locks.try_lock("job", "a", ttl)).await);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(locks.engine().live(), (0, 0));
    assert!(panics(locks.acquire("job", "a", ttl)).await);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(locks.engine().live(), (0, 0));
    // A hand-off's event panics in the waiter's task: the lease goes on.
    let _quiet = tracing::subscriber::set_default(tracing::subscriber::NoSubscriber::default());
    let holder = locks.try_lock("job", "h", ttl).await.unwrap().unwrap();
    drop(_quiet);
    let waiter = tokio::spawn({
        let locks = locks.clone();
        async move { panics(locks.acquire("job", "w", ttl)).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    // A force-release's event panics after the lease ended (and was handed to the waiter).
    assert!(panics(locks.force_release("job")).await);
    assert!(waiter.await.unwrap(), "the waiter's grant event panicked");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(locks.engine().live(), (0, 0));
    // A lost lease's event panics in keep_alive, lapsed and renew.
    assert!(panics(holder.lapsed()).await);
    assert!(panics(holder.keep_alive(Duration::ZERO)).await);
    // An unavailable engine's event panics in the caller.
    locks.engine().set_delay(Duration::from_secs(5));
    assert!(panics(locks.holder("job")).await);
    assert!(panics(locks.try_lock("job", "a", ttl)).await);
    locks.engine().set_delay(Duration::ZERO);
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(locks.engine().live(), (0, 0));
    assert_eq!(locks.sleepers_for_test(), 0);
    drop(_guard);
    assert!(!holder.release().await.unwrap());
}
