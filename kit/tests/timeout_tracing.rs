//! The clean-ups of calls refused for time are traced (the model engine frozen, tokio's
//! paused time). A test binary of its own: tracing caches each event's interest per callsite
//! across threads, and a test without a subscriber running beside this one made its events
//! invisible to this thread's subscriber now and then.

mod model;

use std::time::Duration;

use alkstore_kit::Locks;
use model::{Model, unavailable};

const IO: Duration = Duration::from_millis(100);
const TTL: Duration = Duration::from_secs(600);

async fn store() -> Locks<Model> {
    model::store_with(IO, None).await
}

#[derive(Default)]
struct Counting(std::sync::Mutex<Vec<String>>);

struct Message<'a>(&'a mut Option<String>);

impl tracing::field::Visit for Message<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            *self.0 = Some(format!("{value:?}"));
        }
    }
}

impl tracing::Subscriber for &'static Counting {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        metadata.target() == "alkstore"
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut message = None;
        event.record(&mut Message(&mut message));
        self.0.lock().unwrap().extend(message);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// Each failed attempt of a clean-up is traced, and so is giving up.
#[tokio::test(start_paused = true)]
async fn retried_and_abandoned_clean_ups_are_traced() {
    let counting: &'static Counting = Box::leak(Box::default());
    let _guard = tracing::subscriber::set_default(counting);
    let locks = store().await;
    locks.engine().freeze(Some(Duration::from_millis(30)));
    unavailable(locks.try_lock("job", "a", TTL).await);
    tokio::time::sleep(Duration::from_secs(30)).await;
    let seen = counting.0.lock().unwrap().clone();
    let count = |m: &str| seen.iter().filter(|s| s.as_str() == m).count();
    assert_eq!(count("lock clean-up retried"), 9, "{seen:?}");
    assert_eq!(count("lock clean-up abandoned"), 1, "{seen:?}");
    locks.engine().thaw();
}
