//! The `tracing` feature on the PostgreSQL engine: grants (direct and handed off), a
//! force-release and the lost lease it leaves, each one event with its fields.

mod common;

use std::time::Duration;

use alkstore_mem_conformance::recorder::Recorder;

#[test]
fn grants_hand_offs_force_releases_and_losses_are_traced() {
    let recorder = Recorder::default();
    let _installed = recorder.install();
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
}
