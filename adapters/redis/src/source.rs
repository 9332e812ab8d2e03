//! [`Source`]: where the engine's connections other than its main one go (the pub/sub
//! subscriber, the clean-up connection of the fallback): one server, the master sentinels
//! name, or a Redis Cluster.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use redis::RedisResult;

use crate::sentinel::Sentinels;

/// Where connections go; cheap to clone.
#[derive(Clone, Debug)]
pub(crate) enum Source {
    /// A server at a fixed address.
    Server(Box<redis::Client>),
    /// The master that sentinels name (asked again at each connection).
    Sentinel(Arc<Sentinels>),
    /// A Redis Cluster: its client, and a plain client per seed node for the subscriber.
    Cluster(Arc<ClusterSource>),
}

/// A Redis Cluster's client and its seed nodes.
pub(crate) struct ClusterSource {
    pub(crate) client: redis::cluster::ClusterClient,
    pub(crate) seeds: Vec<redis::Client>,
    /// The seed the next subscription tries first (so that a dead node is not tried first
    /// again and again).
    pub(crate) next_seed: AtomicUsize,
}

impl std::fmt::Debug for ClusterSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterSource")
            .field("seeds", &self.seeds)
            .finish_non_exhaustive()
    }
}

impl Source {
    /// A plain client for the subscriber: the server, the master named now, or a cluster
    /// node (each seed in turn: a cluster delivers `PUBLISH` to subscribers on every node).
    pub(crate) async fn subscriber_client(&self) -> RedisResult<redis::Client> {
        match self {
            Source::Server(client) => Ok((**client).clone()),
            Source::Sentinel(sentinels) => sentinels.master().await,
            Source::Cluster(cluster) => {
                let n = cluster.seeds.len().max(1);
                let at = cluster.next_seed.fetch_add(1, Ordering::Relaxed) % n;
                cluster.seeds.get(at).cloned().ok_or_else(|| {
                    redis::RedisError::from((redis::ErrorKind::InvalidClientConfig, "no seed"))
                })
            }
        }
    }
}
