//! [`Redis::connect_cluster`]: the engine on a Redis Cluster, from its seed nodes' URLs.

use alkstore_mem::LockError;

use crate::config::RedisConfig;
use crate::conn::open_cluster;
use crate::store::Redis;

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
