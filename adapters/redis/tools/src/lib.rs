//! The Redis engine's bench, demo and failover binaries (`src/bin/`: run by `make
//! bench-redis`, `make demo-redis` and `make failover-redis`), and the topologies of servers
//! they and the tests in `tests/` start on loopback: [`server::Server`] (one process of the
//! caller's own, killed by pid) and [`sentinels::SentinelSet`] (a master, a replica and three
//! sentinels).

pub mod cluster;
pub mod failover;
pub mod sentinels;
pub mod server;
