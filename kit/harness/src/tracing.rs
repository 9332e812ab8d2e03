//! The engine's `tracing` events: grants (direct and handed off), a lost lease, a
//! force-release, and a call that ends in `Unavailable`, each one event with its fields. The
//! `Unavailable` case kills a server of its own ([`ports::SESSIONS`]).

use std::time::Duration;

use alkstore_kit::Protocol;
use alkstore_mem_conformance::recorder::Recorder;

use crate::fixture::{Fixture, Server, ports};
use crate::support::{fresh_scope, io, store_at, store_with};

/// Every event the kit emits on the engine, in order, with its fields.
pub fn grants_hand_offs_losses_force_releases_and_unavailable_are_traced<F: Fixture>(f: &F) {
    let recorder = Recorder::default();
    let _installed = recorder.install();
    // A current-thread runtime, so that every event is emitted on this thread.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut server = f.start_server(F::FAULT_PORTS[ports::SESSIONS]);
    runtime.block_on(async {
        let timeout = Duration::from_millis(300);
        let locks = store_with(f, io(timeout)).await;
        let ttl = Duration::from_secs(5);
        let a = locks.try_lock("job", "a", ttl).await.unwrap().unwrap();
        let handed = tokio::spawn(locks.acquire("job", "b", ttl));
        tokio::time::sleep(Duration::from_millis(100)).await;
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
        // A server of this test's own, killed: the next call is Unavailable.
        let gone = store_at(f, &server.url(), &fresh_scope(), io(timeout)).await;
        server.kill();
        let err = gone.holder("job").await.unwrap_err();
        assert!(
            matches!(err, alkstore_mem::LockError::Unavailable { .. }),
            "{err:?}"
        );
    });
    let events = recorder.events();
    let messages: Vec<&str> = events.iter().filter_map(|e| e.get("message")).collect();
    let expected = [
        "lock granted",
        "lock granted",
        "lock force-released",
        "lease lost",
    ];
    assert_eq!(messages[..4], expected, "{events:?}");
    assert_eq!(events[0].get("handed_off"), Some("false"));
    assert_eq!(
        (events[1].get("owner"), events[1].get("handed_off")),
        (Some("b"), Some("true"))
    );
    assert_eq!(events[2].get("owner"), Some("b"));
    let unavailable = events.last().unwrap();
    assert_eq!(unavailable.get("message"), Some("lock engine unavailable"));
    assert_eq!(unavailable.get("context"), Some("job"));
    let error = unavailable.get("error").unwrap();
    let engine = <F::Engine as Protocol>::NAME;
    assert!(
        error.starts_with(&format!("lock engine unavailable: {engine}")),
        "{error}"
    );
}
