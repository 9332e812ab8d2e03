//! Issue-13 review: dropping a PgLock releases it "also at runtime shutdown" and with no
//! runtime; a store's memory under churn; the README's example compiles against the API.

mod common;
mod r13;

use std::time::Duration;

use alkstore_pg::{PgConfig, PgLocks};
use r13::{TTL, ms};

fn same_schema(locks: &PgLocks) -> PgConfig {
    PgConfig::new().with_schema(locks.config().schema())
}

#[test]
fn a_lock_dropped_as_its_runtime_shuts_down_is_released() {
    let main = common::runtime();
    let locks = main.block_on(common::store());
    let other = common::runtime();
    let store = other
        .block_on(PgLocks::connect_with(&common::url(), same_schema(&locks)))
        .unwrap();
    let lock = other
        .block_on(store.try_lock("rt", "o", TTL))
        .unwrap()
        .unwrap();
    other.spawn(async move {
        let _held = lock;
        std::future::pending::<()>().await;
    });
    drop(store);
    drop(other);
    assert_eq!(main.block_on(locks.holder("rt")).unwrap(), None);
}

#[test]
fn a_lock_dropped_with_no_runtime_is_released() {
    let main = common::runtime();
    let locks = main.block_on(common::store());
    let lock = main
        .block_on(locks.try_lock("none", "o", TTL))
        .unwrap()
        .unwrap();
    let waiter = {
        let locks = locks.clone();
        main.spawn(async move { locks.acquire("none", "w", TTL).await })
    };
    std::thread::sleep(ms(200));
    // Dropped on a plain thread: no runtime there.
    std::thread::spawn(move || drop(lock)).join().unwrap();
    let got = main
        .block_on(async { tokio::time::timeout(Duration::from_secs(3), waiter).await })
        .unwrap()
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(got.owner(), "w");
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// 3,000 cycles of try_lock/release, dropped bounded acquires, keep_alive/lapsed started and
/// dropped, on one store: its memory stays flat after a warm-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_stays_flat_under_churn() {
    let locks = common::store().await;
    let held = locks.try_lock("held", "h", TTL).await.unwrap().unwrap();
    let cycle = |i: usize| {
        let locks = locks.clone();
        async move {
            let name = format!("c{}", i % 50);
            if let Some(lock) = locks.try_lock(&name, "o", TTL).await.unwrap() {
                let _ = tokio::time::timeout(ms(1), lock.keep_alive(Duration::ZERO)).await;
                let _ = tokio::time::timeout(ms(1), lock.lapsed()).await;
                assert!(lock.release().await.unwrap());
            }
            let _ = locks.acquire("held", "w", TTL).timeout(ms(1)).await;
        }
    };
    for i in 0..500 {
        cycle(i).await;
    }
    tokio::time::sleep(ms(500)).await;
    let before = rss_kib();
    for i in 0..3000 {
        cycle(i).await;
    }
    tokio::time::sleep(ms(500)).await;
    let grown = rss_kib().saturating_sub(before);
    eprintln!("RSS grew {grown} KiB over 3000 cycles");
    assert!(grown < 8 * 1024, "RSS grew {grown} KiB over 3000 cycles");
    drop(held);
}

/// The README's usage example, as written (compiled, not run: it needs the invoices table).
#[allow(dead_code, reason = "compiled only")]
async fn readme_example() -> Result<(), Box<dyn std::error::Error>> {
    let url = "postgres://app@127.0.0.1:5432/app";
    let config = PgConfig::new().with_schema("billing_locks");
    let locks = PgLocks::connect_with(url, config).await?;
    let (mut db, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    let Some(lock) = locks
        .acquire("invoice/1001", "worker-1", Duration::from_secs(10))
        .timeout(Duration::from_secs(5))
        .await?
    else {
        return Ok(());
    };
    let work = async {
        let tx = db.transaction().await?;
        lock.fence(&tx).await?;
        tx.execute("UPDATE invoices SET status = 'paid' WHERE id = 1001", &[])
            .await?;
        tx.commit().await?;
        Ok::<_, tokio_postgres::Error>(())
    };
    tokio::select! {
        done = work => done?,
        lost = lock.keep_alive(Duration::from_secs(3)) => return Err(lost.into()),
    }
    lock.release().await?;
    Ok(())
}
