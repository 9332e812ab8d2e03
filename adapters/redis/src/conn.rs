//! [`Conn`]: the engine's multiplexed connection, to one server (a [`ConnectionManager`]
//! that reconnects to the same address) or to the master that sentinels name (which asks
//! them again after a connection fails, so that calls after a failover reach the new
//! master).

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, MultiplexedConnection};
use redis::{Cmd, Pipeline, RedisError, RedisFuture, RedisResult, Value};

use alkstore_kit::unavailable;
use alkstore_mem::LockError;
use redis::aio::ConnectionManagerConfig;
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};

use crate::client::{open_client, redacted};
use crate::cluster::{hash_slot, is_cluster_url, seeds};
use crate::config::RedisConfig;
use crate::sentinel::{Sentinels, is_sentinel_url};
use crate::sentinel_conn::SentinelConn;
use crate::source::{ClusterSource, Source};

/// Connects to `url` within the `io_timeout`: a server (`redis://`, `rediss://`, …), the
/// master the sentinels of a `redis+sentinel://` URL name, or the cluster of a
/// `redis+cluster://` URL's seed nodes. Answers the connection and where
/// the engine's other connections (pub/sub, clean-up) go.
pub(crate) async fn open(url: &str, config: &RedisConfig) -> Result<(Conn, Source), LockError> {
    let io = config.io_timeout();
    let timed_out = || {
        unavailable(format!(
            "could not connect to {} within {io:?}",
            redacted(url)
        ))
    };
    let refused =
        |e: RedisError| unavailable(format!("could not connect to {}: {e}", redacted(url)));
    if is_cluster_url(url) {
        return open_cluster(&seeds(url)?, config).await;
    }
    if is_sentinel_url(url) {
        if config.tls_root_ca().is_some() {
            return Err(unavailable(
                "invalid RedisConfig: a TLS root CA is set, but redis+sentinel:// has no TLS in this version",
            ));
        }
        let sentinels = Arc::new(Sentinels::parse(url)?.with_io_timeout(io));
        let conn = tokio::time::timeout(io, SentinelConn::connect(sentinels.clone(), io))
            .await
            .map_err(|_| timed_out())?
            .map_err(refused)?;
        return Ok((Conn::Sentinel(conn), Source::Sentinel(sentinels)));
    }
    let client = open_client(url, config)?;
    let manager_config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(io))
        .set_response_timeout(Some(io))
        .set_number_of_retries(1)
        .set_min_delay(Duration::from_millis(20))
        .set_max_delay(Duration::from_millis(500));
    let manager = ConnectionManager::new_with_config(client.clone(), manager_config);
    let conn = tokio::time::timeout(io, manager)
        .await
        .map_err(|_| timed_out())?
        .map_err(refused)?;
    Ok((Conn::Server(conn), Source::Server(Box::new(client))))
}

/// A connection the scripts run on; cheap to clone (clones share it).
#[derive(Clone)]
pub(crate) enum Conn {
    /// One server; the manager reconnects to it by itself.
    Server(ConnectionManager),
    /// The master named by sentinels.
    Sentinel(SentinelConn),
    /// A Redis Cluster: routes by key, follows `MOVED` and `ASK`, retries `TRYAGAIN`.
    Cluster(ClusterConnection),
    /// A plain connection of its own, for one clean-up.
    Plain(MultiplexedConnection),
}

impl Conn {
    /// Runs `cmd` (a keyless command about the namespace, like `SCAN`) on the node that
    /// holds the slot of `key`: in a cluster, that slot's master; elsewhere, the server.
    pub(crate) async fn on_slot_of<T: redis::FromRedisValue>(
        &mut self,
        key: &str,
        cmd: &Cmd,
    ) -> RedisResult<T> {
        match self {
            Conn::Cluster(conn) => {
                let route = Route::new(hash_slot(key.as_bytes()), SlotAddr::Master);
                let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
                let value = conn.route_command(cmd.clone(), routing).await?;
                redis::from_redis_value(value).map_err(Into::into)
            }
            other => cmd.query_async(other).await,
        }
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Server(conn) => conn.req_packed_command(cmd),
            Conn::Sentinel(conn) => conn.req_packed_command(cmd),
            Conn::Cluster(conn) => conn.req_packed_command(cmd),
            Conn::Plain(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Server(conn) => conn.req_packed_commands(cmd, offset, count),
            Conn::Sentinel(conn) => conn.req_packed_commands(cmd, offset, count),
            Conn::Cluster(conn) => conn.req_packed_commands(cmd, offset, count),
            Conn::Plain(conn) => conn.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Server(conn) => conn.get_db(),
            Conn::Sentinel(conn) => conn.get_db(),
            Conn::Cluster(conn) => conn.get_db(),
            Conn::Plain(conn) => conn.get_db(),
        }
    }
}

/// Connects to the cluster whose seed nodes are `urls` (`redis://host:port` each) within
/// the `io_timeout`.
pub(crate) async fn open_cluster(
    urls: &[String],
    config: &RedisConfig,
) -> Result<(Conn, Source), LockError> {
    let shown = urls
        .iter()
        .map(|u| redacted(u))
        .collect::<Vec<_>>()
        .join(",");
    if urls.is_empty() {
        return Err(unavailable("a Redis Cluster needs at least one seed node"));
    }
    if config.tls_root_ca().is_some() {
        return Err(unavailable(
            "invalid RedisConfig: a TLS root CA is set, but a cluster has no TLS in this version",
        ));
    }
    let io = config.io_timeout();
    let invalid = |e: redis::RedisError| unavailable(format!("invalid cluster url {shown}: {e}"));
    let client = ClusterClientBuilder::new(urls.to_vec())
        .connection_timeout(io)
        .response_timeout(io)
        .build()
        .map_err(invalid)?;
    let seeds = urls
        .iter()
        .map(|u| redis::Client::open(u.as_str()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(invalid)?;
    let conn = tokio::time::timeout(io, client.get_async_connection())
        .await
        .map_err(|_| {
            unavailable(format!(
                "could not connect to the cluster {shown} within {io:?}"
            ))
        })?
        .map_err(|e| unavailable(format!("could not connect to the cluster {shown}: {e}")))?;
    let source = ClusterSource {
        client,
        seeds,
        next_seed: AtomicUsize::new(0),
    };
    Ok((Conn::Cluster(conn), Source::Cluster(Arc::new(source))))
}

impl Source {
    /// A new connection of its own (for a clean-up on another runtime).
    pub(crate) async fn connection(&self) -> RedisResult<Conn> {
        match self {
            Source::Server(client) => Ok(Conn::Plain(
                client.get_multiplexed_async_connection().await?,
            )),
            Source::Sentinel(sentinels) => Ok(Conn::Plain(
                sentinels
                    .master()
                    .await?
                    .get_multiplexed_async_connection()
                    .await?,
            )),
            Source::Cluster(cluster) => {
                Ok(Conn::Cluster(cluster.client.get_async_connection().await?))
            }
        }
    }
}
