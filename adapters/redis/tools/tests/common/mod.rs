//! What the topology suites (`cluster.rs`, `sentinel.rs`) share: the store's config, a
//! waiter queued behind a held lease, and the hand-off to it that must follow a slot move
//! or a failover (woken by pub/sub, with a larger token).

use std::time::Duration;

use alkstore_redis::alkstore_mem::LockError;
use alkstore_redis::{RedisConfig, RedisLock, RedisLocks};
use alkstore_redis_tools::server::{cli, wait_for};

/// The ttl of every lease the suites take.
pub const TTL: Duration = Duration::from_secs(60);

/// A waiting `acquire`, spawned: what it ends with.
pub type Waiter = tokio::task::JoinHandle<Result<Option<RedisLock>, LockError>>;

/// The config of the suites' stores, in namespace `ns`.
pub fn config(ns: &str) -> RedisConfig {
    RedisConfig::new()
        .with_namespace(ns)
        // Long enough to ride over a failover (a call retries until then).
        .with_io_timeout(Duration::from_secs(10))
        // Nothing but a pub/sub message wakes a waiter within the test's bounds.
        .with_waiter_heartbeat(Duration::from_secs(20))
}

/// The key of `name`'s queue in namespace `ns`.
pub fn queue_key(ns: &str, name: &str) -> String {
    format!("{{{ns}}}:queue:{name}")
}

/// A waiter on `name` (owner "waiter", waiting up to 120 s), queued before this returns:
/// seen in the queue on the server whose port `server_of(queue key)` answers (asked again
/// at each look, since the topology decides it).
pub async fn queued_waiter(
    locks: &RedisLocks,
    ns: &str,
    name: &str,
    server_of: impl Fn(&str) -> u16,
) -> Waiter {
    let waiter = tokio::spawn(
        locks
            .acquire(name, "waiter", TTL)
            .timeout(Duration::from_secs(120)),
    );
    let queue = queue_key(ns, name);
    tokio::task::block_in_place(|| {
        wait_for("the waiter queued", Duration::from_secs(10), || {
            cli(server_of(&queue), &["ZCARD", &queue]).trim() == "1"
        });
    });
    waiter
}

/// Releases `held` and checks that `waiter`, still waiting, is handed the lease with a
/// larger token, woken by pub/sub (its heartbeat is 20 s, so nothing else could wake it in
/// time); releases that too and answers its token.
pub async fn hand_off(held: RedisLock, waiter: Waiter) -> u64 {
    if waiter.is_finished() {
        panic!("the waiter ended before the release: {:?}", waiter.await);
    }
    let held_token = held.token();
    let started = tokio::time::Instant::now();
    assert!(held.release().await.unwrap());
    let handed = waiter
        .await
        .unwrap()
        .unwrap()
        .expect("the waiter is served");
    assert_eq!(handed.owner(), "waiter");
    assert!(
        handed.token() > held_token,
        "tokens increase across the move or failover"
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the waiter was woken by pub/sub, not by its 20 s heartbeat"
    );
    let token = handed.token();
    assert!(handed.release().await.unwrap());
    token
}
