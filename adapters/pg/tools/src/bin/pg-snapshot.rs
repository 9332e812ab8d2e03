//! `make bench-pg` (last step): `snapshot()` of a large schema. Writes N live leases straight
//! into a fresh schema's table (default 100,000 and 1,000,000: `pg-snapshot N...`), then
//! times `snapshot()` with the default 2 s `io_timeout` and prints this process's resident
//! memory before the call and its peak (`VmRSS`, `VmHWM` from `/proc/self/status`): the
//! snapshot itself (N `LeaseInfo`s) is what the peak adds; the pages are read one at a time.
//! Needs `ALKSTORE_PG_URL`.

use std::time::{Duration, Instant};

use alkstore_pg::{PgConfig, PgLocks};

/// A `VmRSS`/`VmHWM` line of `/proc/self/status`, in MiB (0 where there is none).
fn status_mib(key: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("ALKSTORE_PG_URL").map_err(|_| "ALKSTORE_PG_URL is not set")?;
    let counts: Vec<i64> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let counts = if counts.is_empty() {
        vec![100_000, 1_000_000]
    } else {
        counts
    };
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    for n in counts {
        let schema = format!("snapshot_bench_{n}_{}", std::process::id());
        let config = PgConfig::new().with_schema(&schema);
        let locks = PgLocks::connect_with(&url, config).await?;
        let q = format!("\"{schema}\"");
        client
            .batch_execute(&format!(
                "SET statement_timeout = 0;
                 INSERT INTO {q}.leases (name, owner, token, deadline, ttl, req, claimed, seen)
                 SELECT 'bench/' || lpad(i::text, 8, '0'), 'owner-' || i, i,
                        (extract(epoch FROM clock_timestamp()) * 1000000)::bigint + 3600000000,
                        3600000000, 'r' || i, true, 0
                   FROM generate_series(1, {n}) i;
                 SELECT setval('{q}.tokens', {n});
                 ANALYZE {q}.leases;"
            ))
            .await?;
        let before = status_mib("VmRSS:");
        let t = Instant::now();
        let snapshot = locks.snapshot().await?;
        let took = t.elapsed();
        let peak = status_mib("VmHWM:");
        assert_eq!(snapshot.held.len() as i64, n, "every lease listed");
        println!(
            "snapshot of {n} live leases: {:.2} s; resident {before:.0} MiB before, peak {peak:.0} MiB",
            took.as_secs_f64()
        );
        drop(snapshot);
        drop(locks);
        client
            .batch_execute(&format!("DROP SCHEMA {q} CASCADE"))
            .await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}
