//! A hostile review of the kit, on the model engine: each test is a defect found (and fixed)
//! or a corner checked.

mod model;

use std::time::Duration;

use alkstore_kit::Locks;
use model::{Model, ModelConfig};

async fn store(delay: Duration) -> Locks<Model> {
    let config = ModelConfig::default().with_io_timeout(Duration::from_secs(1));
    let locks: Locks<Model> = Locks::connect_with("model://", config).await.unwrap();
    locks.engine().set_delay(delay);
    locks
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Finding: with no tokio runtime on the thread, `acquire(..).timeout(w)`, `keep_alive`,
/// `lapsed` and `snapshot` panicked inside tokio's timers ("there is no reactor running")
/// instead of answering `Unavailable`, as every other call does.
#[test]
fn with_no_runtime_every_call_answers_unavailable_not_a_panic() {
    use alkstore_mem::LockError;
    use futures_lite::future::block_on;
    use std::panic::{AssertUnwindSafe, catch_unwind};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let locks = runtime.block_on(store(Duration::ZERO));
    let lock = runtime
        .block_on(locks.try_lock("held", "w", secs(600)))
        .unwrap()
        .unwrap();
    // The engine's own I/O runs on tokio (here: its per-call delay).
    locks.engine().set_delay(Duration::from_millis(1));
    let unavailable =
        |what: &str, answer: Result<LockError, Box<dyn std::any::Any + Send>>| match answer {
            Ok(LockError::Unavailable { reason }) => {
                assert!(reason.contains("no tokio runtime"), "{what}: {reason}");
            }
            Ok(other) => panic!("{what}: {other:?}"),
            Err(_) => panic!("{what} panicked with no runtime"),
        };
    let bounded = catch_unwind(AssertUnwindSafe(|| {
        block_on(locks.acquire("held", "x", secs(60)).timeout(secs(1))).unwrap_err()
    }));
    unavailable("acquire(..).timeout(1s)", bounded);
    let keep = catch_unwind(AssertUnwindSafe(|| {
        block_on(lock.keep_alive(Duration::ZERO))
    }));
    unavailable("keep_alive", keep);
    let lapsed = catch_unwind(AssertUnwindSafe(|| block_on(lock.lapsed())));
    unavailable("lapsed", lapsed);
    let snapshot = catch_unwind(AssertUnwindSafe(|| block_on(locks.snapshot()).unwrap_err()));
    unavailable("snapshot", snapshot);
    assert_eq!(locks.sleepers_for_test(), 0);
    locks.engine().set_delay(Duration::ZERO);
    assert!(runtime.block_on(lock.release()).unwrap());
}
