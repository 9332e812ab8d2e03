//! `rediss://`: a redis-server of the test's own with TLS only (`--port 0 --tls-port P`), its
//! certificates made by the test with the openssl CLI in a scratch dir (a CA, a server
//! certificate for 127.0.0.1 signed by it, and a second CA that signed nothing the server
//! shows). Ports 6431-6433, never the shared server's or the fault tests'.
#![cfg(feature = "tls")]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use alkstore_kit_harness::support;
use alkstore_redis::alkstore_mem::LockError;
use alkstore_redis::{RedisConfig, RedisLocks};
use common::RedisServer;

/// Runs openssl with `args` in `dir`; panics with its stderr when it fails.
fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the openssl CLI runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A self-signed CA `name`.{key,crt} in `dir` (P-256, one day).
fn make_ca(dir: &Path, name: &str) {
    let (key, crt) = (format!("{name}.key"), format!("{name}.crt"));
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &crt,
            "-days",
            "1",
            "-subj",
            &format!("/CN=alkstore {name}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    );
}

/// A redis-server with TLS only, on 127.0.0.1:`port`, certificates made in its scratch dir
/// (see the module docs); killed by pid when dropped (also when the test panics).
fn tls_server(port: u16) -> RedisServer {
    let mut server = RedisServer::unstarted(port);
    let dir = server.dir.clone();
    make_ca(&dir, "ca");
    make_ca(&dir, "other-ca");
    openssl(
        &dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
             keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        &dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "1",
            "-extfile",
            "server.ext",
        ],
    );
    server.launch_tls(&[
        "--tls-cert-file",
        "server.crt",
        "--tls-key-file",
        "server.key",
        "--tls-ca-cert-file",
        "ca.crt",
        "--tls-auth-clients",
        "no",
    ]);
    server
}

/// The PEM of CA `name` made for `server`.
fn pem(server: &RedisServer, name: &str) -> Vec<u8> {
    std::fs::read(server.dir.join(format!("{name}.crt"))).unwrap()
}

fn config(server: &RedisServer, ca: &str) -> RedisConfig {
    RedisConfig::new()
        .with_namespace(support::fresh_scope())
        .with_io_timeout(Duration::from_secs(2))
        .with_tls_root_ca(pem(server, ca))
}

fn unavailable_message(result: Result<RedisLocks, LockError>) -> String {
    match result {
        Err(LockError::Unavailable { reason }) => reason.to_string(),
        Err(other) => panic!("expected Unavailable, got {other:?}"),
        Ok(_) => panic!("expected Unavailable, got a store"),
    }
}

#[test]
fn locks_waiting_and_hand_off_work_over_rediss_with_a_private_root_ca() {
    let server = tls_server(6431);
    support::run(async {
        let locks = RedisLocks::connect_with(&server.url(), config(&server, "ca"))
            .await
            .expect("the TLS server, trusted through the config's root CA");
        let ttl = Duration::from_secs(10);
        let mut first = locks
            .try_lock("tls/a", "one", ttl)
            .await
            .unwrap()
            .expect("free");
        assert!(locks.try_lock("tls/a", "two", ttl).await.unwrap().is_none());
        assert_eq!(first.renew(ttl).await.map(drop), Ok(()));
        // A waiter sleeps on pub/sub (its own TLS connection) and takes the hand-off.
        let second = common::hand_off(&locks, first, ttl).await;
        assert_eq!(second.release().await, Ok(true));
        assert!(locks.snapshot().await.unwrap().held.is_empty());
    });
}

#[test]
fn a_server_certificate_from_another_ca_or_a_bad_tls_config_is_a_clear_unavailable() {
    let server = tls_server(6432);
    support::run(async {
        // Trusting another CA: the handshake fails, the message says why.
        let wrong = RedisLocks::connect_with(&server.url(), config(&server, "other-ca")).await;
        let message = unavailable_message(wrong);
        assert!(
            message.contains(&format!("127.0.0.1:{}", server.port)),
            "{message}"
        );
        assert!(message.to_lowercase().contains("certificate"), "{message}");
        // The system's roots do not know the test's CA either.
        let plain = RedisConfig::new().with_io_timeout(Duration::from_secs(2));
        let message = unavailable_message(RedisLocks::connect_with(&server.url(), plain).await);
        assert!(message.to_lowercase().contains("certificate"), "{message}");
        // A root CA with a plain redis:// url, or one that holds no certificate: refused
        // before any connection.
        let plain_url = format!("redis://127.0.0.1:{}/", server.port);
        let message =
            unavailable_message(RedisLocks::connect_with(&plain_url, config(&server, "ca")).await);
        assert!(message.contains("not a rediss:// url"), "{message}");
        let garbage = RedisConfig::new().with_tls_root_ca(b"not a certificate".to_vec());
        let message = unavailable_message(RedisLocks::connect_with(&server.url(), garbage).await);
        assert!(message.contains("no PEM certificate"), "{message}");
        // The server itself is fine: the right CA still connects.
        let locks = RedisLocks::connect_with(&server.url(), config(&server, "ca")).await;
        assert!(locks.is_ok());
    });
}
