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

use alkstore_kit::unavailable;
use alkstore_mem::LockError;

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
