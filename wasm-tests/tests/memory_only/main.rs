//! What only the in-memory engine can show: exact deadlines, tokens and wake-ups under a
//! `ManualClock` (futures polled by hand with a counting waker), capacity (`max_locks`),
//! a clock stepping back, and the registry's own API (`force_release`, `snapshot`,
//! `remaining`, `ttl`, `waiters`, `sweep`). The rules every engine shares are in
//! `src/bodies/`, run by `tests/memory.rs`.
//! One module a topic: `deadlines`, `capacity`, `waiting`, `admin` (`force_release`, `snapshot`,
//! `sweep`) and `keep_alive` (`keep_alive`, `lapsed`); the helpers they share are here.
//! Runs natively (`cargo test`) and in headless Chromium (`make test-browser`).

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

mod admin;
mod capacity;
mod deadlines;
mod keep_alive;
mod waiting;

use alkstore_mem::{Acquire, LockRegistry, ManualClock};
use alkstore_mem_conformance::Probe;
use core::time::Duration;

const SEC: Duration = Duration::from_secs(1);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

type Waiter = Probe<Acquire<ManualClock>>;

/// An `acquire` bounded by `wait`, polled once: it must be queued.
fn wait_for(
    reg: &LockRegistry<ManualClock>,
    name: &str,
    owner: &str,
    ttl: Duration,
    wait: Duration,
) -> Waiter {
    let mut probe = Probe::new(reg.acquire(name, owner, ttl).timeout(wait));
    probe.pending();
    probe
}

/// Nothing is left behind: no waiter entries, no sleeps registered on the clock.
#[track_caller]
fn assert_nothing_queued(reg: &LockRegistry<ManualClock>, clock: &ManualClock) {
    assert_eq!(reg.waiters(), 0, "waiter entries leaked");
    assert_eq!(clock.pending_sleeps(), 0, "sleeps leaked");
}
