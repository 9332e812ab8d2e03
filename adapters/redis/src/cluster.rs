//! Redis Cluster: `redis+cluster://host:port[,host:port…]` URLs and
//! [`Redis::connect_cluster`](crate::Redis::connect_cluster), the hash slot of a namespace,
//! and the cluster connection.
//!
//! Every key of a namespace is `{ns}:…`, so all of them live in the one slot of `ns`, and
//! every script runs on that slot's master (the `redis` crate routes by the script's keys and
//! follows `MOVED` and `ASK`). While the slot migrates, no script runs: each declares two
//! keys that never exist (`{ns}:` and `{ns}:!`), so the source node answers `ASK` and the
//! target `TRYAGAIN` (multiple keys, some missing) until the slot has moved; the client
//! retries, then runs it on the new owner with the whole namespace there. Otherwise a script
//! sent to the target by `ASK` would see the keys not yet moved as absent, and could grant a
//! name that is held.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use alkstore_kit::unavailable;
use alkstore_mem::LockError;
use redis::cluster::ClusterClientBuilder;

use crate::client::redacted;
use crate::config::RedisConfig;
use crate::conn::Conn;
use crate::source::{ClusterSource, Source};
use crate::store::Redis;

/// The scheme of a URL that names a cluster's seed nodes.
pub(crate) const SCHEME: &str = "redis+cluster";

/// Whether `url` is a `redis+cluster://` URL.
pub(crate) fn is_cluster_url(url: &str) -> bool {
    url.split_once("://")
        .is_some_and(|(scheme, _)| scheme.eq_ignore_ascii_case(SCHEME))
}

/// The seed nodes of a `redis+cluster://host:port[,host:port…][/]` URL, as `redis://` URLs.
pub(crate) fn seeds(url: &str) -> Result<Vec<String>, LockError> {
    let bad = |why: &str| unavailable(format!("invalid redis+cluster url: {why}"));
    let rest = url
        .split_once("://")
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case(SCHEME))
        .map(|(_, rest)| rest)
        .ok_or_else(|| bad("it must start with \"redis+cluster://\""))?;
    if rest.contains(['@', '?', '#']) {
        return Err(bad(
            "credentials, queries and fragments are not supported in it",
        ));
    }
    let hosts = rest.strip_suffix('/').unwrap_or(rest);
    if hosts.contains('/') {
        return Err(bad("a cluster has no db: nothing may follow the hosts"));
    }
    hosts
        .split(',')
        .map(|host| {
            let host = host.trim();
            if host.is_empty() {
                return Err(bad("an empty node address"));
            }
            Ok(format!("redis://{host}/"))
        })
        .collect()
}

/// The hash slot of `key` (CRC16/XMODEM of its hash tag, mod 16384), as Redis Cluster
/// computes it.
pub(crate) fn hash_slot(key: &[u8]) -> u16 {
    let tag = key
        .iter()
        .position(|b| *b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            let close = rest.iter().position(|b| *b == b'}')?;
            (close > 0).then(|| &rest[..close])
        })
        .unwrap_or(key);
    let mut crc: u16 = 0;
    for byte in tag {
        crc ^= u16::from(*byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc % 16384
}

impl Redis {
    /// Connects to the Redis Cluster whose seed nodes are `urls` (`redis://host:port` each;
    /// one reachable node is enough, the others are found from it) within the `io_timeout`:
    /// the same as `RedisLocks::connect_with("redis+cluster://host:port,host:port", config)`.
    /// Wrap it with [`RedisLocks::from_engine`](alkstore_kit::Locks::from_engine).
    /// [`LockError::Unavailable`] when no node answers, a URL is invalid, the namespace is
    /// (see [`RedisConfig::with_namespace`]), or a TLS root CA is set (no TLS in a cluster in
    /// this version).
    ///
    /// # Example
    /// ```no_run
    /// use alkstore_redis::{Redis, RedisConfig, RedisLocks};
    ///
    /// # async fn run() -> Result<(), alkstore_redis::alkstore_mem::LockError> {
    /// let urls = ["redis://10.0.0.1:7000", "redis://10.0.0.2:7000"];
    /// let engine = Redis::connect_cluster(&urls, RedisConfig::new().with_namespace("billing")).await?;
    /// let locks = RedisLocks::from_engine(engine);
    /// # drop(locks);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect_cluster(
        urls: &[impl AsRef<str>],
        config: RedisConfig,
    ) -> Result<Redis, LockError> {
        Redis::checked(&config)?;
        let urls: Vec<String> = urls.iter().map(|u| u.as_ref().to_owned()).collect();
        let (conn, source) = open_cluster(&urls, &config).await?;
        Ok(Redis::from_parts(conn, source, config))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_slots_match_redis() {
        // Values from `CLUSTER KEYSLOT`.
        assert_eq!(hash_slot(b"foo"), 12182);
        assert_eq!(hash_slot(b"{user1000}.following"), hash_slot(b"user1000"));
        assert_eq!(hash_slot(b"{alk}:lock:x"), hash_slot(b"alk"));
        assert_eq!(hash_slot(b"{}x"), hash_slot(b"{}x"));
        // CRC16/XMODEM check value of "123456789" is 0x31c3 (below 16384).
        assert_eq!(hash_slot(b"123456789"), 0x31c3);
    }

    #[test]
    fn cluster_urls_name_seed_nodes() {
        assert_eq!(
            seeds("redis+cluster://a:1,b:2/").unwrap(),
            ["redis://a:1/", "redis://b:2/"]
        );
        assert_eq!(seeds("REDIS+CLUSTER://a:1").unwrap(), ["redis://a:1/"]);
        for (url, why) in [
            ("redis+cluster://a:1/0", "no db"),
            ("redis+cluster://u:pw@a:1", "credentials"),
            ("redis+cluster://a:1,,b:2", "empty node"),
            ("redis://a:1", "must start with"),
        ] {
            let error = seeds(url).unwrap_err().to_string();
            assert!(error.contains(why), "{url}: {error}");
        }
    }
}
