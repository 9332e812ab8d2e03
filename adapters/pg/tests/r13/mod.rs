//! Helpers of the issue-13 review suites (`review13_*.rs`): raw SQL on a store's schema, a
//! server clock moved back, and the schema's NOTIFY channel as the engine names it.
#![allow(dead_code, reason = "each review suite uses part of it")]

use std::time::Duration;

use alkstore_pg::PgLocks;

pub const TTL: Duration = Duration::from_secs(30);

pub fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// The store's schema as a quoted identifier.
pub fn q(locks: &PgLocks) -> String {
    format!("\"{}\"", locks.config().schema())
}

/// Moves the schema's lease clock BACK by `by` (what an NTP step of the server's clock does):
/// the test-clock offset is lowered directly, as no API moves it back.
pub async fn step_clock_back(client: &tokio_postgres::Client, locks: &PgLocks, by: Duration) {
    let us = i64::try_from(by.as_micros()).unwrap();
    client
        .execute(
            &format!(
                "UPDATE {}.test_clock SET offset_us = offset_us - $1",
                q(locks)
            ),
            &[&us],
        )
        .await
        .unwrap();
}

/// Rows of `table` (`leases` or `waiters`) of the store's schema for `name`.
pub async fn rows_for(
    client: &tokio_postgres::Client,
    locks: &PgLocks,
    table: &str,
    name: &str,
) -> i64 {
    client
        .query_one(
            &format!("SELECT count(*) FROM {}.{table} WHERE name = $1", q(locks)),
            &[&name],
        )
        .await
        .unwrap()
        .get(0)
}

/// The engine's NOTIFY channel for `schema` (64-bit FNV-1a of the name, as `sql.rs` makes it).
pub fn channel(schema: &str) -> String {
    let h = schema.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("alk_{h:016x}")
}

/// Terminates the backends whose current or last query is `LISTEN <channel of schema>`: the
/// store's listening connection. Returns how many.
pub async fn terminate_listener(client: &tokio_postgres::Client, schema: &str) -> i64 {
    let query = format!("LISTEN {}", channel(schema));
    client
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query = $1",
            &[&query],
        )
        .await
        .unwrap()
        .get(0)
}
