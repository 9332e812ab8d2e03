//! `rediss://`: a redis-server of the test's own with TLS only (`--port 0 --tls-port P`), its
//! certificates made by the test with the openssl CLI in a scratch dir (a CA, a server
//! certificate for 127.0.0.1 signed by it, and a second CA that signed nothing the server
//! shows). Ports 6431-6433, never the shared server's or the fault tests'.
#![cfg(feature = "tls")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use alkstore_kit_harness::support;
use alkstore_redis::alkstore_mem::LockError;
use alkstore_redis::{RedisConfig, RedisLocks};

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

/// A redis-server with TLS only, on 127.0.0.1:`port`, certificates in its scratch dir;
/// killed by pid when dropped (also when the test panics).
struct TlsServer {
    port: u16,
    dir: PathBuf,
    pid: u32,
}

impl TlsServer {
    fn start(port: u16) -> TlsServer {
        let port = support::port(port);
        assert!(
            !support::listens(port),
            "something already listens on 127.0.0.1:{port}; not touching it"
        );
        let dir = support::scratch_dir("redis-tls", port);
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
        let pidfile = dir.join("redis.pid");
        let status = Command::new("redis-server")
            .args([
                "--port",
                "0",
                "--tls-port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .args([
                "--tls-cert-file",
                "server.crt",
                "--tls-key-file",
                "server.key",
            ])
            .args(["--tls-ca-cert-file", "ca.crt", "--tls-auth-clients", "no"])
            .arg("--dir")
            .arg(&dir)
            .args(["--save", "", "--appendonly", "no", "--daemonize", "yes"])
            .arg("--pidfile")
            .arg(&pidfile)
            .arg("--logfile")
            .arg(dir.join("redis.log"))
            .current_dir(&dir)
            .status()
            .expect("redis-server runs (make setup installs it)");
        assert!(status.success());
        support::wait_until("the TLS redis-server writes its pid", || {
            std::fs::read_to_string(&pidfile).is_ok_and(|p| p.trim().parse::<u32>().is_ok())
        });
        let pid = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let server = TlsServer { port, dir, pid };
        support::wait_until("the TLS redis-server answers", || {
            server.cli(&["ping"]).starts_with("PONG")
        });
        server
    }

    fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}/", self.port)
    }

    fn pem(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.dir.join(format!("{name}.crt"))).unwrap()
    }

    fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string(), "--tls", "--cacert"])
            .arg(self.dir.join("ca.crt"))
            .args(args)
            .output()
            .expect("redis-cli runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        support::signal(self.pid, "-KILL");
        support::wait_gone(self.pid);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn config(server: &TlsServer, ca: &str) -> RedisConfig {
    RedisConfig::new()
        .with_namespace(support::fresh_scope())
        .with_io_timeout(Duration::from_secs(2))
        .with_tls_root_ca(server.pem(ca))
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
    let server = TlsServer::start(6431);
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
        let waiter = {
            let locks = locks.clone();
            tokio::spawn(async move {
                locks
                    .acquire("tls/a", "two", ttl)
                    .timeout(Duration::from_secs(5))
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        let token = first.token();
        assert_eq!(first.release().await, Ok(true));
        let second = waiter.await.unwrap().unwrap().expect("handed over");
        assert!(second.token() > token);
        assert_eq!(second.release().await, Ok(true));
        assert!(locks.snapshot().await.unwrap().held.is_empty());
    });
}

#[test]
fn a_server_certificate_from_another_ca_or_a_bad_tls_config_is_a_clear_unavailable() {
    let server = TlsServer::start(6432);
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
