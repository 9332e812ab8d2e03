//! The `tracing` feature: which events a registry emits, with which fields, and that none is
//! emitted while a shard is locked (a subscriber that calls back into the registry would
//! deadlock it). Run with `cargo test -p alkstore-mem --all-features --test tracing`.
#![cfg(feature = "tracing")]

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alkstore_mem::{LockRegistry, ManualClock};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// One event as the subscriber saw it: its message and its fields, as text.
#[derive(Debug, Default, Clone)]
struct Seen {
    fields: Vec<(String, String)>,
}

impl Seen {
    fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Visit for Seen {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.fields
            .push((field.name().into(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.fields.push((field.name().into(), value.into()));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.fields.push((field.name().into(), value.to_string()));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.fields.push((field.name().into(), value.to_string()));
    }
}

/// Records every event; on each, calls back into the registry it watches (which would
/// deadlock if the event were emitted under a shard's lock).
struct Recorder {
    seen: Arc<Mutex<Vec<Seen>>>,
    registry: LockRegistry<ManualClock>,
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
        // User code inside the event: reads every shard.
        let _ = self.registry.snapshot();
        if let Some(name) = seen.get("name") {
            let _ = self.registry.holder(name);
        }
        self.seen.lock().unwrap().push(seen);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Emits every event once with no subscriber on this thread, so that their callsites are
/// registered before the recorder is installed: a callsite's first hit, racing a subscriber's
/// installation on another thread, can store "never" after the installation's rebuild.
fn register_callsites() {
    use alkstore_mem::{LeaseInfo, LockError, Timestamp, events};
    let error = LockError::Unavailable {
        reason: "registering the callsites".into(),
    };
    let at = Timestamp::from_millis(0);
    events::granted("", "", 0, at, false);
    events::renew_refused("", "", 0, &error);
    events::lease_lost("", 0, &error);
    events::force_released(&LeaseInfo::new("", "", 0, at));
    events::unavailable("", &error);
}

#[test]
fn grants_hand_offs_refusals_losses_and_force_releases_are_traced_outside_the_locks() {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let clock = ManualClock::new();
        let registry = LockRegistry::new(clock.clone());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recorder = Recorder {
            seen: Arc::clone(&seen),
            registry: registry.clone(),
        };
        register_callsites();
        tracing::subscriber::with_default(recorder, || {
            // Another test thread may have cached "never" for a callsite meanwhile.
            tracing::callsite::rebuild_interest_cache();
            let secs = Duration::from_secs;
            let a = registry.try_lock("job", "a", secs(10)).unwrap().unwrap();
            let mut waiting = Box::pin(registry.acquire("job", "b", secs(10)));
            let noop = &mut std::task::Context::from_waker(std::task::Waker::noop());
            assert!(waiting.as_mut().poll(noop).is_pending());
            drop(a); // hands off to b
            let std::task::Poll::Ready(Ok(Some(mut b))) = waiting.as_mut().poll(noop) else {
                panic!("b was handed the lease");
            };
            clock.advance(secs(10));
            assert!(b.renew(secs(10)).is_err());
            let c = registry.try_lock("job", "c", secs(10)).unwrap().unwrap();
            assert!(
                futures_lite::future::block_on(b.lapsed())
                    .to_string()
                    .contains("lapsed")
            );
            registry.force_release("job").unwrap();
            drop(c);
        });
        let events = seen.lock().unwrap().clone();
        done.send(events).unwrap();
    });
    let events = finished
        .recv_timeout(Duration::from_secs(20))
        .expect("an event emitted under a shard lock deadlocked the registry");
    let messages: Vec<&str> = events.iter().filter_map(|e| e.get("message")).collect();
    assert_eq!(
        messages,
        [
            "lock granted",
            "lock granted",
            "renew refused",
            "lock granted",
            "lease lost",
            "lock force-released"
        ]
    );
    let handed = &events[1];
    assert_eq!(
        (
            handed.get("owner"),
            handed.get("token"),
            handed.get("handed_off")
        ),
        (Some("b"), Some("2"), Some("true"))
    );
    assert_eq!(events[0].get("handed_off"), Some("false"));
    assert!(events[2].get("error").unwrap().contains("lapsed just now"));
    assert_eq!(events[5].get("owner"), Some("c"));
}
