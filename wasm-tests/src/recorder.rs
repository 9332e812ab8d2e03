//! [`Recorder`]: a `tracing` subscriber that keeps every `alkstore` event, for the engines'
//! tests of their `tracing` feature (natively).

use std::sync::{Arc, Mutex, PoisonError};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// One event as the subscriber saw it: its fields (the message among them) as text.
#[derive(Debug, Default, Clone)]
pub struct Seen(Vec<(String, String)>);

impl Seen {
    /// The field `name` as text (`"message"` for the event's message), if it has one.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Visit for Seen {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().into(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().into(), value.into()));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.push((field.name().into(), value.to_string()));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.push((field.name().into(), value.to_string()));
    }
}

/// Keeps every event of target `alkstore`; clones share one list.
///
/// # Example
/// ```
/// use alkstore_mem_conformance::recorder::Recorder;
///
/// let recorder = Recorder::default();
/// let _installed = recorder.install();
/// alkstore_mem::events::unavailable("job", &alkstore_mem::LockError::Unavailable {
///     reason: "refused".into(),
/// });
/// # let _ = recorder.events(); // with the core's `tracing` feature, one event
/// ```
#[derive(Clone, Debug, Default)]
pub struct Recorder(Arc<Mutex<Vec<Seen>>>);

impl Recorder {
    /// Makes this the current thread's subscriber until the guard is dropped.
    #[must_use = "the subscriber is uninstalled when the guard is dropped"]
    pub fn install(&self) -> tracing::subscriber::DefaultGuard {
        let guard = tracing::subscriber::set_default(self.clone());
        // A callsite first hit by another test's thread (with no subscriber) while this one
        // was being made may have cached "never": ask every callsite again.
        tracing::callsite::rebuild_interest_cache();
        guard
    }

    /// The events seen so far, in order.
    pub fn events(&self) -> Vec<Seen> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == "alkstore"
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut seen = Seen::default();
        event.record(&mut seen);
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(seen);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}
