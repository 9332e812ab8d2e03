//! The core on a `ManualClock`: try_lock, a busy name, a lapsed lease, fencing tokens, and
//! waiting with `acquire(..).timeout(..)`, driven by `futures_lite::future::block_on`.
//!
//! `cargo run -p alkstore-mem --example basic`

use alkstore_mem::{Fence, LockError, LockRegistry, ManualClock};
use core::time::Duration;
use futures_lite::future;

fn main() -> Result<(), LockError> {
    let secs = Duration::from_secs;
    // A clock that moves only when told to: every step below is exact and repeatable.
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());

    // worker-a takes "invoice/7" for 10 s.
    let a = registry
        .try_lock("invoice/7", "worker-a", secs(10))?
        .expect("the name is free");
    println!("worker-a holds {} with token {}", a.name(), a.token());

    // Busy is a value, not an error: worker-b gets `None`.
    assert!(
        registry
            .try_lock("invoice/7", "worker-b", secs(10))?
            .is_none()
    );
    println!("worker-b: busy");

    // worker-a stalls for 10 s: its lease lapses exactly at its deadline.
    clock.advance(secs(10));
    assert!(!a.is_held());
    println!("after 10 s, worker-a's lease has lapsed");

    // worker-b takes over with a larger fencing token: whatever the lock protects keeps a
    // `Fence`, the largest token it has seen, and refuses writes that carry a smaller one.
    let b = registry
        .try_lock("invoice/7", "worker-b", secs(10))?
        .expect("free again");
    assert!(b.token() > a.token());
    let invoice = Fence::new();
    assert!(invoice.check(b.token()).is_ok(), "worker-b writes");
    let stale = invoice.check(a.token()).unwrap_err();
    assert_eq!((stale.token, stale.highest), (a.token(), b.token()));
    println!(
        "worker-b holds it with token {}; worker-a's late write (token {}) is refused",
        b.token(),
        a.token()
    );
    // Releasing a lapsed lease is harmless and never frees the newer one.
    assert!(!a.release());
    assert_eq!(
        registry.holder("invoice/7").expect("held").owner(),
        "worker-b"
    );

    // Waiting: worker-c waits up to 3 s while worker-b holds the name, and gives up.
    // ManualClock's sleeps end only when the clock moves, so something else must move it:
    // `future::or` polls the wait first (it queues and sleeps), then the second future,
    // which advances the clock by 3 s and wakes the wait.
    let waited = future::block_on(future::or(
        registry
            .acquire("invoice/7", "worker-c", secs(10))
            .timeout(secs(3)),
        async {
            clock.advance(secs(3));
            future::pending().await
        },
    ))?;
    assert!(waited.is_none());
    println!("worker-c gave up after 3 s: still busy");

    // worker-c waits again, and worker-b releases: the lease is handed straight over.
    let b_token = b.token();
    let waiting = registry
        .acquire("invoice/7", "worker-c", secs(10))
        .timeout(secs(3));
    let c = future::block_on(future::or(waiting, async {
        assert!(b.release());
        future::pending().await
    }))?
    .expect("handed over on release");
    assert!(c.token() > b_token);
    println!(
        "worker-c holds it with token {} after worker-b released",
        c.token()
    );

    // A zero timeout answers exactly as try_lock does.
    let now = future::block_on(
        registry
            .acquire("invoice/7", "worker-d", secs(1))
            .timeout(Duration::ZERO),
    )?;
    assert!(now.is_none());
    drop(c); // dropping a handle releases its lease
    assert!(registry.holder("invoice/7").is_none());
    println!("done");
    Ok(())
}
