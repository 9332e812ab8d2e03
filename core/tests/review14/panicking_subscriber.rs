//! Section 3 of `review14.rs`: a tracing subscriber that panics (user code) must not strand
//! a grant.

use super::*;
use std::panic::{AssertUnwindSafe, catch_unwind};

#[path = "../support/panic_on_grant.rs"]
mod panic_on_grant;
use panic_on_grant::{PanicOnGrant, grant_event, sees_grants};

/// `try_lock` emits "lock granted" after the grant is in the table but before the `Lock`
/// handle exists: the subscriber's panic leaves a lease that no handle owns, so nobody
/// can release it, and the name stays taken until the ttl runs out (here an hour).
#[test]
fn a_panicking_subscriber_does_not_strand_a_try_lock_grant() {
    let registry = LockRegistry::new(ManualClock::new());
    grant_event();
    let outcome = tracing::subscriber::with_default(PanicOnGrant, || {
        assert!(sees_grants(), "the subscriber sees grant events");
        catch_unwind(AssertUnwindSafe(|| {
            registry.try_lock("job", "a", secs(3600))
        }))
    });
    assert!(outcome.is_err(), "the subscriber panicked inside try_lock");
    assert_eq!(
        registry.holder("job"),
        None,
        "a lease nobody holds a handle to blocks the name for its whole ttl"
    );
    assert!(registry.try_lock("job", "b", secs(1)).unwrap().is_some());
}

/// The same on a hand-off: the waiter's poll emits "lock granted" (handed off) after the
/// waiter left the queue and before the `Lock` exists. Dropping the `Acquire` afterwards
/// (its drop is what passes on a grant it did not take) finds nothing to pass on: the
/// lease stays, owned by no handle, and the waiter behind it waits for its whole ttl.
#[test]
fn a_panicking_subscriber_does_not_strand_a_handed_off_grant() {
    let registry = LockRegistry::new(ManualClock::new());
    let holder = registry.try_lock("job", "a", secs(10)).unwrap().unwrap();
    let mut first = Box::pin(registry.acquire("job", "b", secs(3600)));
    let mut second = Box::pin(registry.acquire("job", "c", secs(10)));
    let mut cx = noop();
    assert!(first.as_mut().poll(&mut cx).is_pending());
    assert!(second.as_mut().poll(&mut cx).is_pending());
    assert!(holder.release(), "handed to the first waiter");
    grant_event();
    let outcome = tracing::subscriber::with_default(PanicOnGrant, || {
        assert!(sees_grants(), "the subscriber sees grant events");
        catch_unwind(AssertUnwindSafe(|| {
            first.as_mut().poll(&mut noop()).is_ready()
        }))
    });
    assert!(
        outcome.is_err(),
        "the subscriber panicked inside the waiter's poll"
    );
    drop(first); // the caller gives up on the panicked future, as unwinding would
    let Poll::Ready(Ok(Some(lock))) = second.as_mut().poll(&mut cx) else {
        panic!(
            "the second waiter is not served: the name is held by {:?}, which no handle owns",
            registry.holder("job")
        );
    };
    assert_eq!(lock.owner(), "c");
}
