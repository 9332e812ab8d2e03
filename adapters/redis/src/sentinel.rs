//! `redis+sentinel://` URLs: the sentinels to ask, the master's name, and how to find the
//! master they name now.

use std::time::Duration;

use alkstore_kit::unavailable;
use alkstore_mem::LockError;
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use redis::{ErrorKind, IntoConnectionInfo, RedisConnectionInfo, RedisError, RedisResult};

/// How often a store asks the sentinels which server is the master, at most (before a call,
/// and in the subscriber): a demoted master that still answers is left within about this.
pub(crate) const RECHECK: Duration = Duration::from_secs(1);

/// The scheme of a URL that names sentinels and a master instead of a server.
pub(crate) const SCHEME: &str = "redis+sentinel";

/// Whether `url` is a `redis+sentinel://` URL.
pub(crate) fn is_sentinel_url(url: &str) -> bool {
    url.split_once("://")
        .is_some_and(|(scheme, _)| scheme.eq_ignore_ascii_case(SCHEME))
}

/// The sentinels of one master: `redis+sentinel://host:port[,host:port…]/master_name[/db]`.
/// A port left out is 26379, Sentinel's own. Nothing in it is secret (credentials are
/// refused), so it shows whole in messages.
#[derive(Clone, Debug)]
pub(crate) struct Sentinels {
    /// One `redis://host:port/` URL per sentinel, in the order given (asked in that order).
    nodes: Vec<String>,
    master: String,
    db: i64,
    /// How long one sentinel may take to answer (and its master to be checked) before the
    /// next is asked: see [`with_io_timeout`](Self::with_io_timeout).
    each: Duration,
}

impl Sentinels {
    /// Parses a `redis+sentinel://` URL; [`LockError::Unavailable`] says what is wrong.
    pub(crate) fn parse(url: &str) -> Result<Sentinels, LockError> {
        let bad = |why: &str| unavailable(format!("invalid redis+sentinel url: {why}"));
        let rest = url
            .split_once("://")
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case(SCHEME))
            .map(|(_, rest)| rest)
            .ok_or_else(|| bad("it must start with \"redis+sentinel://\""))?;
        if rest.contains(['@', '?', '#']) {
            return Err(bad(
                "credentials, queries and fragments are not supported in it",
            ));
        }
        let (hosts, path) = rest
            .split_once('/')
            .ok_or_else(|| bad("the master's name is missing (…/master_name)"))?;
        let mut segments = path.split('/');
        let master = segments.next().unwrap_or_default();
        if master.is_empty() {
            return Err(bad("the master's name is missing (…/master_name)"));
        }
        let db = match segments.next() {
            None | Some("") => 0,
            Some(db) => db
                .parse::<i64>()
                .ok()
                .filter(|db| *db >= 0)
                .ok_or_else(|| bad("the db after the master's name must be a number"))?,
        };
        if segments.any(|s| !s.is_empty()) {
            return Err(bad("a path past /master_name/db"));
        }
        let mut nodes = Vec::new();
        for host in hosts.split(',') {
            let host = host.trim();
            if host.is_empty() {
                return Err(bad("an empty sentinel address"));
            }
            let has_port = match host.rfind(']') {
                Some(bracket) => host[bracket..].contains(':'),
                None => host.contains(':'),
            };
            let node = if has_port {
                format!("redis://{host}/")
            } else {
                format!("redis://{host}:26379/")
            };
            node.as_str()
                .into_connection_info()
                .map_err(|e| bad(&format!("sentinel address {host:?}: {e}")))?;
            nodes.push(node);
        }
        Ok(Sentinels {
            nodes,
            master: master.into(),
            db,
            each: Duration::from_secs(1),
        })
    }

    /// Gives each sentinel `io_timeout / (sentinels + 1)` (at least 50 ms) to answer, so
    /// that asking them all in turn ends within the `io_timeout` with the reason.
    pub(crate) fn with_io_timeout(mut self, io: Duration) -> Sentinels {
        let parts = u32::try_from(self.nodes.len().saturating_add(1)).unwrap_or(u32::MAX);
        self.each = (io / parts).max(Duration::from_millis(50));
        self
    }

    /// A client for the server the sentinels name as the master now: asked in order, each
    /// within its share of the timeout; the first that names a master that is up decides
    /// (the server is checked to call itself master). When none does, the last error: a
    /// sentinel that did not answer ([`is_silence`]), or one that names no master that is up.
    pub(crate) async fn master(&self) -> RedisResult<redis::Client> {
        let info = SentinelNodeConnectionInfo::default()
            .set_redis_connection_info(RedisConnectionInfo::default().set_db(self.db));
        let mut last = RedisError::from((ErrorKind::EmptySentinelList, "no sentinel"));
        for node in &self.nodes {
            // A fresh client each time: it caches connections to the sentinels on the runtime
            // it first ran on, which a fallback on another runtime must not reuse.
            let mut client = SentinelClient::build(
                vec![node.as_str().into_connection_info()?],
                self.master.clone(),
                Some(info.clone()),
                SentinelServerType::Master,
            )?;
            last = match tokio::time::timeout(self.each, client.async_get_client()).await {
                Ok(Ok(client)) => return Ok(client),
                Ok(Err(e)) if e.kind() == ErrorKind::MasterNameNotFoundBySentinel => {
                    RedisError::from((
                        ErrorKind::MasterNameNotFoundBySentinel,
                        "no master that is up",
                        format!(
                            "sentinel {node} names no master {:?} that is up: it does not \
                             monitor it, or the master is down or failing over",
                            self.master
                        ),
                    ))
                }
                Ok(Err(e)) => e,
                Err(_) => RedisError::from((
                    ErrorKind::Io,
                    SILENCE,
                    format!("sentinel {node} did not answer within {:?}", self.each),
                )),
            };
        }
        Err(last)
    }
}

/// The description of the error of a sentinel that did not answer in time.
const SILENCE: &str = "a sentinel did not answer";

/// Whether `e` says a sentinel did not answer in time (see [`Sentinels::master`]).
pub(crate) fn is_silence(e: &RedisError) -> bool {
    e.kind() == ErrorKind::Io && e.to_string().contains(SILENCE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinel_urls_name_hosts_master_and_db() {
        let s =
            Sentinels::parse("redis+sentinel://127.0.0.1:26379,[::1]:26380,h/mymaster/2").unwrap();
        assert_eq!(
            s.nodes,
            [
                "redis://127.0.0.1:26379/",
                "redis://[::1]:26380/",
                "redis://h:26379/"
            ]
        );
        assert_eq!((s.master.as_str(), s.db), ("mymaster", 2));
        let s = Sentinels::parse("REDIS+SENTINEL://a:1/m").unwrap();
        assert_eq!((s.master.as_str(), s.db), ("m", 0));
        assert!(is_sentinel_url("Redis+Sentinel://a/m"));
        assert!(!is_sentinel_url("redis://a/"));
    }

    #[test]
    fn bad_sentinel_urls_are_refused_with_the_reason() {
        for (url, why) in [
            ("redis+sentinel://a:1", "master's name is missing"),
            ("redis+sentinel://a:1/", "master's name is missing"),
            ("redis+sentinel://u:pw@a:1/m", "credentials"),
            ("redis+sentinel://a:1/m?x=1", "queries"),
            ("redis+sentinel://a:1,,b/m", "empty sentinel address"),
            ("redis+sentinel://a:1/m/x", "must be a number"),
            ("redis+sentinel://a:1/m/-1", "must be a number"),
            ("redis+sentinel://a:1/m/0/z", "a path past"),
            ("redis+sentinel://a:99999/m", "sentinel address"),
            ("redis://a:1/m", "must start with"),
        ] {
            let error = Sentinels::parse(url).unwrap_err().to_string();
            assert!(error.contains(why), "{url}: {error}");
            assert!(!error.contains("pw"), "{url}: {error}");
        }
    }
}
