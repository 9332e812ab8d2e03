//! Helpers shared by the PostgreSQL test suites: the shared cluster's URL, fresh schemas, raw
//! clients, throwaway clusters of their own for fault tests, and the [`Fixture`] that runs the
//! kit's shared suites (`alkstore-kit-harness`) on PostgreSQL.
#![allow(dead_code, reason = "each test binary uses part of it")]

mod cluster;

use std::time::Duration;

use alkstore_kit_harness::CommonConfig;
use alkstore_pg::{Pg, PgConfig, PgLocks};

pub use cluster::PgCluster;

/// The PostgreSQL engine for the shared suites: scopes are schemas; fault servers are
/// throwaway clusters of the tests' own ([`PgCluster`]), whose data survives a restart.
pub struct Fixture;

impl alkstore_kit_harness::Fixture for Fixture {
    // The Makefile's PG_FAULT_PORTS (each test binary runs alone, so binaries may share).
    const FAULT_PORTS: &'static [u16] = &[5440, 5441, 5442, 5443, 5444, 5445, 5451, 5452];
    const RESTART_KEEPS_DATA: bool = true;
    type Server = PgCluster;
    type Engine = Pg;

    fn start_server(&self, port: u16) -> PgCluster {
        PgCluster::start(port)
    }

    fn config(&self, scope: &str, common: CommonConfig) -> PgConfig {
        // Connecting installs the schema and opens the whole pool, all within the io_timeout:
        // a short one (300-500 ms in some shared tests) gets its schema installed beforehand,
        // and below 400 ms a pool of one, which a loaded machine opens in time.
        let io = common.io_timeout();
        if io < Duration::from_secs(1) {
            preinstall(scope);
        }
        let limits = common.limits();
        let pool = if io < Duration::from_millis(400) {
            1
        } else {
            PgConfig::new().pool_size()
        };
        let config = PgConfig::new()
            .with_io_timeout(common.io_timeout())
            .with_pool_size(pool);
        config
            .with_waiter_heartbeat(common.waiter_heartbeat())
            .with_max_owner_len(limits.max_owner_len())
            .with_max_name_len(limits.max_name_len())
            .with_schema(scope)
    }

    fn url(&self) -> String {
        url()
    }
}

/// Installs schema `scope` on the shared cluster with a generous `io_timeout`, so that a
/// store connecting with a short one only checks it: installing a schema takes longer than
/// 150 ms on a loaded machine. (A fault test's own cluster is not helped.)
fn preinstall(scope: &str) {
    let config = PgConfig::new()
        .with_schema(scope)
        .with_io_timeout(Duration::from_secs(30));
    let url = url();
    std::thread::spawn(move || {
        runtime().block_on(async {
            let store = PgLocks::connect_with(&url, config).await;
            drop(store.expect("the test cluster answers"));
        });
    })
    .join()
    .expect("the schema is installed");
}

/// A multi-thread tokio runtime with two workers, time and I/O: what the suites run on.
#[allow(unused_imports, reason = "each test binary uses part of it")]
pub use alkstore_kit_harness::support::runtime;

/// The shared test cluster's URL. Tests FAIL without it: run them with `make test-pg`.
pub fn url() -> String {
    std::env::var("ALKSTORE_PG_URL").unwrap_or_else(|_| {
        panic!(
            "ALKSTORE_PG_URL is not set: these tests need a PostgreSQL. Run `make test-pg`, \
             which starts a throwaway cluster on 127.0.0.1:5439 and sets it"
        )
    })
}

/// A schema no other test (or run) uses.
pub fn fresh_schema() -> String {
    alkstore_kit_harness::fresh_scope()
}

/// A store on the shared cluster, in a fresh schema.
pub async fn store() -> PgLocks {
    store_with(PgConfig::new()).await
}

/// A store on the shared cluster with `config`, in a fresh schema.
pub async fn store_with(config: PgConfig) -> PgLocks {
    PgLocks::connect_with(&url(), config.with_schema(fresh_schema()))
        .await
        .expect("the test cluster answers")
}

/// A plain tokio-postgres client on `url`, its connection driven by a task.
pub async fn client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("the test cluster answers");
    tokio::spawn(connection);
    client
}
