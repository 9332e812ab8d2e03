//! A registry on `PerformanceClock`: try_lock, a busy name, keep_alive while working past the
//! ttl, release, and a bounded acquire.
//!
//! The same code builds for the browser and natively:
//! - natively it runs on the host stand-ins (std time, one timer thread):
//!   `cargo run -p alkstore-mem-web --example registry`;
//! - on wasm32 `main` spawns it with `wasm_bindgen_futures::spawn_local` and logs to the
//!   console: `cargo build -p alkstore-mem-web --example registry --target wasm32-unknown-unknown`,
//!   then `wasm-bindgen --target web` and load it from a page.

use core::time::Duration;

use alkstore_mem_web::{
    Clock, Fence, LockError, PerformanceClock, Timer, WebAcquire, WebLock, WebLockRegistry,
};
use futures_lite::future;

async fn run() -> Result<(), LockError> {
    let clock = PerformanceClock::new();
    let registry = WebLockRegistry::new(clock.clone());
    let ttl = Duration::from_millis(300);

    let lock: WebLock = registry
        .try_lock("sync/outbox", "tab-1", ttl)?
        .expect("the name is free");
    log(&format!("tab-1 holds sync/outbox, token {}", lock.token()));
    assert!(registry.try_lock("sync/outbox", "tab-2", ttl)?.is_none());
    log("tab-2: busy");

    // Work for a second, three times the ttl, while keep_alive renews every 100 ms. If a
    // renewal failed (the lease was lost), keep_alive would end first with the error and
    // the work would be dropped.
    let token = lock.token();
    let work = async {
        let done = clock.now().saturating_add(Duration::from_secs(1));
        clock.sleep_until(done).await;
        Ok(())
    };
    let lost = async { Err(lock.keep_alive(Duration::from_millis(100)).await) };
    future::or(work, lost).await?;
    let holder = registry.holder("sync/outbox").expect("still held");
    assert_eq!(holder.token(), token, "the same lease, renewed");
    log(&format!(
        "after 1 s of work the lease is still tab-1's, {:?} left",
        lock.remaining()
    ));
    assert!(lock.release());

    // tab-2 waits up to a second for the name: free now, so at once.
    let waiting: WebAcquire = registry
        .acquire("sync/outbox", "tab-2", ttl)
        .timeout(Duration::from_secs(1));
    let next = waiting.await?.expect("free after the release");
    assert!(next.token() > token, "a larger fencing token");
    log(&format!("tab-2 holds it, token {}", next.token()));

    // The outbox the lock protects keeps a `Fence`: tab-2's write goes through, and a late
    // write with tab-1's older token is refused.
    let outbox = Fence::new();
    assert!(outbox.check(next.token()).is_ok());
    assert!(outbox.check(token).is_err(), "tab-1's token is stale now");
    Ok(())
}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> Result<(), LockError> {
    future::block_on(run())
}

#[cfg(target_arch = "wasm32")]
fn main() {
    wasm_bindgen_futures::spawn_local(async {
        if let Err(err) = run().await {
            log(&format!("error: {err}"));
        }
    });
}

#[cfg(not(target_arch = "wasm32"))]
fn log(line: &str) {
    println!("{line}");
}

#[cfg(target_arch = "wasm32")]
fn log(line: &str) {
    #[wasm_bindgen::prelude::wasm_bindgen]
    extern "C" {
        #[wasm_bindgen(js_namespace = console)]
        fn log(line: &str);
    }
    log(line);
}
