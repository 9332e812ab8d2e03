//! The `tracing` feature on the Redis engine: grants (direct and handed off), a lost lease,
//! a force-release, and a call that ends in `Unavailable`, each one event with its fields.
//! The `Unavailable` case kills a server of its own on port 6397.

mod common;

use std::time::Duration;

use alkstore_mem_conformance::recorder::Recorder;
use alkstore_redis::{RedisConfig, RedisLocks};

#[test]
fn grants_hand_offs_losses_force_releases_and_unavailable_are_traced() {
    let recorder = Recorder::default();
    let _installed = recorder.install();
    // A current-thread runtime, so that every event is emitted on this thread.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let io = Duration::from_millis(300);
        let locks = common::store_with(RedisConfig::new().with_io_timeout(io)).await;
        let a = locks
            .try_lock("job", "a", Duration::from_secs(5))
            .await
            .unwrap()
            .unwrap();
        let waiting = locks.acquire("job", "b", Duration::from_secs(5));
        let handed = tokio::spawn(waiting);
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
        // A server of this test's own (port 6397), killed: the next call is Unavailable.
        let mut server = common::RedisServer::start(6397);
        let gone = RedisLocks::connect_with(&server.url(), RedisConfig::new().with_io_timeout(io))
            .await
            .unwrap();
        server.kill();
        let err = gone.holder("job").await.unwrap_err();
        assert!(
            matches!(err, alkstore_mem::LockError::Unavailable { .. }),
            "{err:?}"
        );
    });
    let events = recorder.events();
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
    let unavailable = events.last().unwrap();
    assert_eq!(unavailable.get("message"), Some("lock engine unavailable"));
    assert_eq!(unavailable.get("context"), Some("job"));
    assert!(
        unavailable
            .get("error")
            .unwrap()
            .starts_with("lock engine unavailable: redis")
    );
}
