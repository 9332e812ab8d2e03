//! The `tracing` feature on the PostgreSQL engine: grants (direct and handed off), a
//! force-release and the lost lease it leaves, each one event with its fields.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// The message and fields of one event, as text.
#[derive(Debug, Default, Clone)]
struct Seen(Vec<(String, String)>);

impl Seen {
    fn get(&self, name: &str) -> Option<&str> {
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

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Seen>>>);

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
        self.0.lock().unwrap().push(seen);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn grants_hand_offs_force_releases_and_losses_are_traced() {
    let recorder = Recorder::default();
    let _default = tracing::subscriber::set_default(recorder.clone());
    // A current-thread runtime, so that every event is emitted on this thread.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let locks = common::store().await;
        let a = locks
            .try_lock("job", "a", Duration::from_secs(5))
            .await
            .unwrap()
            .unwrap();
        let handed = tokio::spawn({
            let locks = locks.clone();
            async move { locks.acquire("job", "b", Duration::from_secs(5)).await }
        });
        for _ in 0..500 {
            if !locks.snapshot().await.unwrap().waiting.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(a.release().await.unwrap());
        let b = handed.await.unwrap().unwrap().unwrap();
        locks
            .force_release("job")
            .await
            .unwrap()
            .expect("held by b");
        let why = b.lapsed().await;
        assert!(why.to_string().contains("force-released"), "{why}");
        drop(b);
    });
    let events = recorder.0.lock().unwrap().clone();
    let messages: Vec<&str> = events.iter().filter_map(|e| e.get("message")).collect();
    assert_eq!(
        messages[..4],
        [
            "lock granted",
            "lock granted",
            "lock force-released",
            "lease lost"
        ],
        "{events:?}"
    );
    assert_eq!(events[0].get("handed_off"), Some("false"));
    assert_eq!(
        (events[1].get("owner"), events[1].get("handed_off")),
        (Some("b"), Some("true"))
    );
    assert_eq!(events[2].get("owner"), Some("b"));
}
