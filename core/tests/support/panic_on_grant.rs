//! [`PanicOnGrant`]: a `tracing` subscriber that panics on the "lock granted" event, as a
//! buggy subscriber (a full channel's `unwrap`, a formatting bug) does, for the tests that
//! a panicking subscriber (user code) does not strand a grant.
//!
//! One file for every engine: the core's `tests/review14.rs` includes it by path (the
//! core's tests depend on nothing built on the core), and the conformance crate includes
//! it as `alkstore_mem_conformance::recorder::PanicOnGrant` for the engines' tests.

use std::panic::catch_unwind;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Panics on the "lock granted" event of target `alkstore`; sees no other target.
#[derive(Debug, Clone, Copy, Default)]
pub struct PanicOnGrant;

/// An event's message, as text.
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

/// Emits a grant event. Called with no subscriber installed on this thread, before
/// installing [`PanicOnGrant`], it registers the event's callsite first (a first hit on
/// another test thread racing the installation could keep "never" for good).
pub fn grant_event() {
    alkstore_mem::events::granted("", "", 0, alkstore_mem::Timestamp::from_millis(0), false);
}

/// Whether a grant event reaches [`PanicOnGrant`], installed on this thread: asks every
/// callsite again and emits one (it panics on it), up to 100 times, since another test
/// thread may have cached "never" for the callsite meanwhile.
pub fn sees_grants() -> bool {
    (0..100).any(|_| {
        tracing::callsite::rebuild_interest_cache();
        catch_unwind(grant_event).is_err()
    })
}
