//! Section 3 of `review14.rs`: a tracing subscriber that panics (user code) must not strand
//! a grant.

use super::*;
use alkstore_mem_conformance::recorder::{PanicOnGrant, sees_grants};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// `try_lock` emits "lock granted" before the `RedisLock` exists: a panicking subscriber
/// leaves a lease in Redis that no handle owns (so no drop releases it), and the name
/// is taken for the whole ttl (an hour here) in every process.
#[test]
fn redis_a_panicking_subscriber_does_not_strand_a_try_lock_grant() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store = rt.block_on(store());
    alkstore_mem_conformance::recorder::register_callsites();
    let outcome = tracing::subscriber::with_default(PanicOnGrant, || {
        assert!(sees_grants(), "the subscriber sees grant events");
        catch_unwind(AssertUnwindSafe(|| {
            rt.block_on(store.try_lock("job", "a", Duration::from_secs(3600)))
        }))
    });
    assert!(outcome.is_err(), "the subscriber panicked inside try_lock");
    rt.block_on(async {
        // A dropped lock would be released by a spawned task: give it time to run.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            holder_owner(&store, "job").await,
            None,
            "a lease no handle owns blocks the name for its whole ttl"
        );
    });
}
