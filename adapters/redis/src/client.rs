//! The Redis client for a URL (plain or TLS), and the URL as messages may show it.

use core::fmt;

use alkstore_kit::unavailable;
use alkstore_mem::LockError;

use crate::config::RedisConfig;

/// `url` for messages: its scheme, host, port and path (the db) only. Whatever could hold a
/// secret is left out: everything up to the last `@` (user and password, even unescaped
/// ones), and the query and fragment (`redis+unix:///path?pass=…`).
pub(crate) fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "(a url without \"scheme://\", not quoted)".into();
    };
    let rest = rest.rsplit_once('@').map_or(rest, |(_, after)| after);
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    format!("{scheme}://{rest}")
}

/// The client for `url`: plain, or TLS (`rediss://`) with the system's roots or the config's
/// root CA.
pub(crate) fn open_client(url: &str, config: &RedisConfig) -> Result<redis::Client, LockError> {
    let invalid =
        |e: &dyn fmt::Display| unavailable(format!("invalid redis url {}: {e}", redacted(url)));
    let tls = url
        .split_once("://")
        .is_some_and(|(scheme, _)| scheme.eq_ignore_ascii_case("rediss"));
    #[cfg(feature = "tls")]
    if tls {
        // rustls needs a process-wide crypto provider; ours is ring. An application that
        // installed one of its own keeps it.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    #[cfg(not(feature = "tls"))]
    if tls {
        return Err(unavailable(format!(
            "cannot connect to {}: this build of alkstore-redis has no TLS (feature \"tls\")",
            redacted(url)
        )));
    }
    let Some(pem) = config.tls_root_ca() else {
        return redis::Client::open(url).map_err(|e| invalid(&e));
    };
    if !tls {
        return Err(unavailable(format!(
            "invalid RedisConfig: a TLS root CA is set but {} is not a rediss:// url",
            redacted(url)
        )));
    }
    #[cfg(feature = "tls")]
    {
        if !String::from_utf8_lossy(pem).contains("-----BEGIN CERTIFICATE-----") {
            return Err(unavailable(
                "invalid RedisConfig: the TLS root CA holds no PEM certificate",
            ));
        }
        let certificates = redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(pem.to_vec()),
        };
        redis::Client::build_with_tls(url, certificates).map_err(|e| invalid(&e))
    }
    #[cfg(not(feature = "tls"))]
    {
        let _ = pem;
        Err(unavailable(
            "this build of alkstore-redis has no TLS (feature \"tls\")",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::redacted;

    #[test]
    fn redacted_urls_keep_scheme_host_port_and_db_only() {
        assert_eq!(
            redacted("redis://user:hunter2@127.0.0.1:6379/2"),
            "redis://127.0.0.1:6379/2"
        );
        assert_eq!(redacted("rediss://:hunter2@h:1/"), "rediss://h:1/");
        assert_eq!(redacted("redis://us@er:hun/ter@2@h:1/0"), "redis://h:1/0");
        assert_eq!(redacted("redis://h/"), "redis://h/");
        assert_eq!(
            redacted("redis+unix:///run/redis.sock?db=1&pass=hunter2"),
            "redis+unix:///run/redis.sock"
        );
        assert!(!redacted("user:hunter2@h:1").contains("hunter2"));
    }
}
