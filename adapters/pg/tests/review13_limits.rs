//! Issue-13 review: configuration and input extremes. io_timeout 0 and `Duration::MAX`,
//! pool size 0/1, waiter heartbeat `Duration::MAX`, ttls of `Duration::MAX` and 1 ns, names
//! at the limit in multibyte UTF-8 and longer limits, schema names, a 10,000-name snapshot,
//! and `holder()` agreeing with the handle's `info()`. No panic from bad input.

mod common;
mod r13;

use std::time::Duration;

use alkstore_mem::LockError;
use alkstore_pg::{PgConfig, PgLocks};
use r13::{TTL, ms};

/// `with_io_timeout(Duration::MAX)` ("how long any one call may take") or 30 days: the
/// engine passes it to the server as `statement_timeout` in ms, which PostgreSQL refuses
/// above 2^31-1 ms, so every connect fails. Expected: a working store (clamped, as the Redis
/// engine clamps its io_timeout), or a clear config error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_io_timeout_still_connects() {
    for io in [Duration::from_secs(30 * 24 * 3600), Duration::MAX] {
        let config = PgConfig::new()
            .with_schema(common::fresh_schema())
            .with_io_timeout(io);
        let store = PgLocks::connect_with(&common::url(), config).await;
        assert!(store.is_ok(), "io_timeout {io:?}: {:?}", store.err());
        let lock = store.unwrap().try_lock("x", "o", TTL).await.unwrap();
        assert!(lock.is_some());
    }
}

/// A zero io_timeout (1 ms) and a zero pool (1): no panic; errors are Unavailable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_io_timeout_and_zero_pool_do_not_panic() {
    let config = PgConfig::new()
        .with_pool_size(0)
        .with_io_timeout(Duration::ZERO);
    assert_eq!(config.pool_size(), 1);
    match PgLocks::connect_with(&common::url(), config.with_schema(common::fresh_schema())).await {
        Ok(store) => {
            let r = store.try_lock("x", "o", TTL).await;
            assert!(
                matches!(r, Ok(_) | Err(LockError::Unavailable { .. })),
                "{r:?}"
            );
        }
        Err(e) => assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}"),
    }
    let one = common::store_with(PgConfig::new().with_pool_size(1)).await;
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let one = one.clone();
            tokio::spawn(async move {
                let lock = one
                    .try_lock(&format!("p{i}"), "o", TTL)
                    .await
                    .unwrap()
                    .unwrap();
                lock.release().await.unwrap()
            })
        })
        .collect();
    for t in tasks {
        assert!(t.await.unwrap());
    }
}

/// `with_waiter_heartbeat(Duration::MAX)`: a waiting acquire multiplies it by three and
/// panics ("overflow when multiplying duration by scalar"). Expected: no panic from a
/// config value (the Redis engine clamps its heartbeat to 60 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_waiter_heartbeat_does_not_panic() {
    let locks = common::store_with(PgConfig::new().with_waiter_heartbeat(Duration::MAX)).await;
    let held = locks.try_lock("hb", "h", TTL).await.unwrap().unwrap();
    let l2 = locks.clone();
    let waited =
        tokio::spawn(async move { l2.acquire("hb", "w", TTL).timeout(ms(200)).await }).await;
    assert!(
        waited.as_ref().is_ok_and(|r| matches!(r, Ok(None))),
        "{:?}",
        waited.map_err(|e| e.is_panic())
    );
    drop(held);
}

/// ttl `Duration::MAX` (cut to 100 years) and 1 ns (1 µs): no panic, exclusion and tokens hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extreme_ttls() {
    let locks = common::store().await;
    let mut long = locks
        .try_lock("max", "o", Duration::MAX)
        .await
        .unwrap()
        .unwrap();
    let unix = std::time::UNIX_EPOCH.elapsed().unwrap();
    let ahead = long.deadline().as_duration().saturating_sub(unix);
    assert!(
        ahead > Duration::from_secs(99 * 365 * 24 * 3600),
        "{ahead:?}"
    );
    assert!(locks.try_lock("max", "p", TTL).await.unwrap().is_none());
    long.renew(Duration::MAX).await.unwrap();
    assert_eq!(locks.holder("max").await.unwrap().unwrap(), long.info());
    assert!(long.release().await.unwrap());
    let short = locks
        .try_lock("ns", "o", Duration::from_nanos(1))
        .await
        .unwrap()
        .unwrap();
    tokio::time::sleep(ms(2)).await;
    assert!(!short.is_held().await.unwrap());
    let next = locks.try_lock("ns", "p", TTL).await.unwrap().unwrap();
    assert!(next.token() > short.token());
    assert!(!short.release().await.unwrap());
    let w = locks
        .acquire("ns2", "o", Duration::from_nanos(1))
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(
        w.keep_alive(Duration::ZERO).await,
        LockError::InvalidTtl { .. }
    ));
    drop(next);
}

/// Names at the 256-byte limit in 2-, 3- and 4-byte UTF-8 work; one byte over is refused
/// locally. A store configured for longer names (the core allows any limit) must take a
/// name within its limit: here 6,000 bytes of varied CJK, which PostgreSQL's btree primary
/// key cannot index (2,704 bytes at most), so the lock call fails with `Unavailable`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_up_to_the_configured_limit_can_be_locked() {
    let locks = common::store().await;
    for (c, n) in [('é', 128), ('中', 85), ('🚀', 64)] {
        let name: String =
            std::iter::repeat_n(c, n).collect::<String>() + &"x".repeat(256 - n * c.len_utf8());
        assert_eq!(name.len(), 256);
        let lock = locks.try_lock(&name, "o", TTL).await.unwrap().unwrap();
        assert_eq!(locks.holder(&name).await.unwrap().unwrap(), lock.info());
        let over = format!("{name}y");
        assert!(matches!(
            locks.try_lock(&over, "o", TTL).await,
            Err(LockError::InvalidName { .. })
        ));
        assert!(lock.release().await.unwrap());
    }
    let long = common::store_with(PgConfig::new().with_max_name_len(8192)).await;
    let name: String = (0..2000u32)
        .map(|i| char::from_u32(0x4E00 + (i.wrapping_mul(7919) % 20000)).unwrap())
        .collect();
    assert_eq!(name.len(), 6000);
    let got = long.try_lock(&name, "o", TTL).await;
    assert!(
        matches!(got, Ok(Some(_))),
        "a 6000-byte name within the limit: {got:?}"
    );
}

/// Schema names: case-sensitive (two schemas), 63 bytes, a lone "-"; all usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_names_at_the_edges() {
    let base = common::fresh_schema();
    let upper = format!("{}X", base.to_uppercase());
    let lower = upper.to_lowercase();
    let a = PgLocks::connect_with(&common::url(), PgConfig::new().with_schema(&upper))
        .await
        .unwrap();
    let b = PgLocks::connect_with(&common::url(), PgConfig::new().with_schema(&lower))
        .await
        .unwrap();
    let la = a.try_lock("same", "a", TTL).await.unwrap().unwrap();
    let lb = b.try_lock("same", "b", TTL).await.unwrap().unwrap();
    assert_eq!((la.token(), lb.token()), (1, 1));
    let long = format!("{base}{}", "-".repeat(63 - base.len()));
    assert_eq!(long.len(), 63);
    let c = PgLocks::connect_with(&common::url(), PgConfig::new().with_schema(&long))
        .await
        .unwrap();
    let lc = c.try_lock("x", "o", TTL).await.unwrap().unwrap();
    let client = common::client(&common::url()).await;
    let token = i64::try_from(lc.token()).unwrap();
    client
        .execute(&c.fence_sql(), &[&"x", &token])
        .await
        .unwrap();
    let too_long = format!("{long}a");
    assert!(
        PgLocks::connect_with(&common::url(), PgConfig::new().with_schema(too_long))
            .await
            .is_err()
    );
    drop((la, lb, lc));
}

/// 10,000 live leases: one snapshot lists them all, sorted by name (bytewise), within the
/// io_timeout; `holder()` agrees with `info()` on a sample.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_of_ten_thousand_names() {
    let locks = common::store().await;
    let tasks: Vec<_> = (0..16)
        .map(|t| {
            let locks = locks.clone();
            tokio::spawn(async move {
                let mut infos = Vec::new();
                for i in (t..10_000).step_by(16) {
                    let name = format!("n/{i:05}/ü{}", i % 7);
                    let lock = locks
                        .try_lock(&name, &format!("o{i}"), TTL)
                        .await
                        .unwrap()
                        .unwrap();
                    infos.push(lock.info());
                    lock.detach();
                }
                infos
            })
        })
        .collect();
    let mut infos = Vec::new();
    for t in tasks {
        infos.extend(t.await.unwrap());
    }
    let snapshot = locks.snapshot().await.unwrap();
    assert_eq!(snapshot.held.len(), 10_000);
    assert!(snapshot.held.windows(2).all(|w| w[0].name() < w[1].name()));
    infos.sort_by(|a, b| a.name().cmp(b.name()));
    assert_eq!(snapshot.held, infos);
    for info in infos.iter().step_by(997) {
        assert_eq!(
            locks.holder(info.name()).await.unwrap().as_ref(),
            Some(info)
        );
    }
}
