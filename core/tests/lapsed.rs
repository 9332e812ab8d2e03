//! `Lock::lapsed`: resolves when the lease ends, by time or by an operator.

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use alkstore_mem::{LockRegistry, ManualClock};

struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting() -> (Arc<CountingWaker>, Waker) {
    let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
    (Arc::clone(&counter), Waker::from(counter))
}

#[test]
fn force_release_wakes_a_pending_lapsed_at_once_not_at_the_deadline() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let lock = registry
        .try_lock("migration", "deploy-1", Duration::from_secs(3600))
        .unwrap()
        .unwrap();
    let (counter, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    let mut lapsed = pin!(lock.lapsed());
    assert!(lapsed.as_mut().poll(&mut cx).is_pending());
    assert_eq!(counter.0.load(Ordering::SeqCst), 0);

    registry.force_release("migration").expect("it was held");
    assert_eq!(
        counter.0.load(Ordering::SeqCst),
        1,
        "woken by the force-release"
    );
    assert!(lapsed.as_mut().poll(&mut cx).is_ready());
    assert_eq!(clock.pending_sleeps(), 0, "its sleep is gone too");
}

#[test]
fn lapsed_follows_renewals_and_resolves_at_the_final_deadline() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let mut lock = registry
        .try_lock("job", "a", Duration::from_secs(10))
        .unwrap()
        .unwrap();
    let (_counter, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    {
        let mut lapsed = pin!(lock.lapsed());
        assert!(lapsed.as_mut().poll(&mut cx).is_pending());
        clock.advance(Duration::from_secs(5));
        assert!(lapsed.as_mut().poll(&mut cx).is_pending());
    }
    lock.renew(Duration::from_secs(10)).unwrap(); // deadline 15 s
    let mut lapsed = pin!(lock.lapsed());
    assert!(lapsed.as_mut().poll(&mut cx).is_pending());
    clock.advance(Duration::from_secs(9)); // 14 s
    assert!(lapsed.as_mut().poll(&mut cx).is_pending());
    clock.advance(Duration::from_secs(1)); // 15 s
    assert!(lapsed.as_mut().poll(&mut cx).is_ready());
}

#[test]
fn a_dropped_lapsed_leaves_no_sleep_and_force_release_after_it_wakes_nobody() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let lock = registry
        .try_lock("job", "a", Duration::from_secs(10))
        .unwrap()
        .unwrap();
    let (counter, waker) = counting();
    {
        let mut lapsed = pin!(lock.lapsed());
        assert!(
            lapsed
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        assert_eq!(clock.pending_sleeps(), 1);
    }
    assert_eq!(clock.pending_sleeps(), 0);
    registry.force_release("job");
    assert_eq!(
        counter.0.load(Ordering::SeqCst),
        0,
        "its waker was forgotten"
    );
}
