//! [`Recorder`]: a `tracing` subscriber that keeps every `alkstore` event, for the engines'
//! tests of their `tracing` feature (natively); [`PanicOnGrant`]: one that panics on a
//! grant, for their tests that a panicking subscriber does not strand one.

use std::sync::{Arc, Mutex, PoisonError};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

// The core's own file, which its tests include too (they cannot depend on this crate).
#[path = "../../core/tests/support/panic_on_grant.rs"]
mod panic_on_grant;
pub use panic_on_grant::{PanicOnGrant, grant_event, sees_grants};

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

/// Emits every event of [`alkstore_mem::events`] once, to register their callsites with
/// `tracing` before a test installs a subscriber of its own (call it with none installed on
/// this thread: the events then go nowhere). A callsite's first hit computes its interest
/// from the subscribers that exist at that moment and stores it *after* a rebuild that runs
/// meanwhile, so a callsite first hit by a parallel test while this thread's subscriber was
/// being installed can keep "never" for good; one registered beforehand is asked again by
/// every later installation. [`Recorder::install`] calls this first.
pub fn register_callsites() {
    emit_each("");
}

/// The name the probes of [`Recorder::install`] carry (no lock name holds a NUL).
const PROBE: &str = "\0alkstore-recorder-probe";
/// How many events [`emit_each`] emits.
const EVENTS: usize = 5;
/// How many times [`Recorder::install`] asks the callsites again at most.
const PROBES: usize = 100;

/// Emits each of the [`EVENTS`] events of [`alkstore_mem::events`] once, for lock `name`.
fn emit_each(name: &str) {
    use alkstore_mem::{LeaseInfo, LockError, Timestamp, events};
    let error = LockError::Unavailable {
        reason: "probing the callsites".into(),
    };
    let at = Timestamp::from_millis(0);
    events::granted(name, "", 0, at, false);
    events::renew_refused(name, "", 0, &error);
    events::lease_lost(name, 0, &error);
    events::force_released(&LeaseInfo::new(name, "", 0, at));
    events::unavailable(name, &error);
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
        register_callsites();
        let guard = tracing::subscriber::set_default(self.clone());
        // A callsite first hit by another test's thread (with no subscriber) while this one
        // was being made may have cached "never": ask every callsite again until each event
        // reaches this recorder (a bounded number of times: without the core's `tracing`
        // feature none ever does), and forget the probes.
        for _ in 0..PROBES {
            tracing::callsite::rebuild_interest_cache();
            emit_each(PROBE);
            let mut seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            let before = seen.len();
            seen.retain(|e| e.get("name") != Some(PROBE) && e.get("context") != Some(PROBE));
            if before - seen.len() == EVENTS {
                break;
            }
        }
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
