//! Section 3 of `review14.rs`: a tracing subscriber that panics (user code) must not strand
//! a grant.

use super::*;
use std::panic::{AssertUnwindSafe, catch_unwind};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

struct PanicOnGrant;

struct Message(Option<String>);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = Some(format!("{value:?}"));
        }
    }
}

impl Subscriber for PanicOnGrant {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == "alkstore"
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut message = Message(None);
        event.record(&mut message);
        if message.0.as_deref() == Some("lock granted") {
            panic!("subscriber bug");
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

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
        // Another test thread may have cached "never" for a callsite meanwhile: ask
        // again until the grant event reaches this subscriber (it panics on it).
        let sees_grants = (0..100).any(|_| {
            tracing::callsite::rebuild_interest_cache();
            catch_unwind(|| {
                alkstore_mem::events::granted(
                    "",
                    "",
                    0,
                    alkstore_mem::Timestamp::from_millis(0),
                    false,
                )
            })
            .is_err()
        });
        assert!(sees_grants, "the subscriber sees grant events");
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
