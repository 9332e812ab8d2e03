//! What the suites and the fixtures share: runtimes, scopes, stores, child processes, and the
//! pieces of a scratch server (signals by pid, waiting for a process to go).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use alkstore_kit::CommonConfig;

use crate::fixture::{Fixture, Store};

/// A multi-thread tokio runtime with two workers, time and I/O: what the suites run on.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Runs `test` on a fresh [`runtime`].
pub fn run(test: impl Future<Output = ()>) {
    runtime().block_on(test);
}

/// A scope (namespace, schema) no other test or run uses: `t<pid>_<nanos>_<n>`, valid as a
/// Redis namespace and as an unquoted PostgreSQL schema name.
pub fn fresh_scope() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    format!(
        "t{}_{}_{}",
        std::process::id(),
        nanos % 1_000_000_000_000,
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A store on the shared server, in a fresh scope, with the default settings.
pub async fn store<F: Fixture>(fixture: &F) -> Store<F> {
    store_with(fixture, CommonConfig::new()).await
}

/// A store on the shared server, in a fresh scope, with `common`.
pub async fn store_with<F: Fixture>(fixture: &F, common: CommonConfig) -> Store<F> {
    store_at(fixture, &fixture.url(), &fresh_scope(), common).await
}

/// A store on the server at `url`, in `scope`, with `common`. Connecting is the test's
/// precondition, not what it checks: a connect that the test's short `io_timeout` cut on a
/// loaded machine is tried again (20 attempts in all) before the test fails.
pub async fn store_at<F: Fixture>(
    fixture: &F,
    url: &str,
    scope: &str,
    common: CommonConfig,
) -> Store<F> {
    let mut attempts = 0;
    loop {
        attempts += 1;
        match Store::<F>::connect_with(url, fixture.config(scope, common)).await {
            Ok(store) => return store,
            // Up to 20 attempts (about 10 s with a 300 ms io_timeout): the store's connect
            // is bounded by the test's io_timeout, and on a machine busy with make test's
            // compilers a fresh server session once took longer than 5 attempts of 300 ms.
            Err(alkstore_mem::LockError::Unavailable { reason }) if attempts < 20 => {
                eprintln!("connect attempt {attempts} to the test server failed: {reason}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(err) => panic!("the test server answers: {err:?}"),
        }
    }
}

/// `CommonConfig` with this `io_timeout`.
pub fn io(timeout: Duration) -> CommonConfig {
    CommonConfig::new().with_io_timeout(timeout)
}

/// Waits (polling every 10 ms, up to 5 s) until `condition` holds; panics with `what` if it
/// never does. For states that spawned tasks reach soon, not for timings.
pub async fn eventually<Fut: Future<Output = bool>>(
    what: &str,
    mut condition: impl FnMut() -> Fut,
) {
    let start = Instant::now();
    while !condition().await {
        assert!(start.elapsed() < Duration::from_secs(5), "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Runs this test binary again as a child in `role` (its `child` test, which the suites'
/// macros define), with `env` and stdout piped.
pub fn spawn_child(role: &str, env: &[(&str, String)]) -> Child {
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command
        .args(["--exact", "child", "--nocapture", "--test-threads=1", "-q"])
        .env("ALKSTORE_CHILD", role)
        .stdout(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    command.spawn().expect("the test binary runs as a child")
}

/// The role this process runs as a child (`ALKSTORE_CHILD`), if it is one.
pub fn child_role() -> Option<String> {
    std::env::var("ALKSTORE_CHILD").ok()
}

/// The child's environment variable `key` (set by the parent).
pub fn child_env(key: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| panic!("the parent sets {key}"))
}

/// The port a test's own server takes for the fixed `base` port written in the test:
/// `base + ALKSTORE_TEST_PORT_OFFSET` (0 when unset), so that two checkouts (or two suites
/// that share fixed ports) can run side by side, e.g. `ALKSTORE_TEST_PORT_OFFSET=1000`.
///
/// # Panics
/// If the variable is not a number or the sum leaves the port range: a misconfigured run
/// stops at once rather than touching a port it did not mean.
pub fn port(base: u16) -> u16 {
    let offset = match std::env::var("ALKSTORE_TEST_PORT_OFFSET") {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse::<u16>()
            .unwrap_or_else(|_| panic!("ALKSTORE_TEST_PORT_OFFSET={v:?} is not a port offset")),
        _ => 0,
    };
    base.checked_add(offset)
        .unwrap_or_else(|| panic!("port {base} + offset {offset} is past 65535"))
}

/// A fresh scratch dir for `engine`'s server on `port` (removed first if a crashed run left
/// it).
pub fn scratch_dir(engine: &str, port: u16) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "alkstore-{engine}-fault-{port}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch dir");
    dir
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
pub fn listens(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// Sends `signal` (`-STOP`, `-CONT`, `-KILL`, ...) to `pid`. Never by name.
pub fn signal(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status();
}

/// Waits (up to 5 s) until process `pid` is gone (or a zombie).
pub fn wait_gone(pid: u32) {
    let start = Instant::now();
    let stat = format!("/proc/{pid}/stat");
    while Path::new(&stat).exists()
        && std::fs::read_to_string(&stat).is_ok_and(|s| !s.contains(") Z "))
    {
        assert!(start.elapsed() < Duration::from_secs(5), "{pid} lives on");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits (up to 30 s: a server starting or a replica syncing on a loaded machine) until
/// `check` holds.
pub fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < Duration::from_secs(30), "never: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A small deterministic pseudo-random sequence (xorshift), for drop points.
#[derive(Debug, Clone)]
pub struct Jitter(u64);

impl Jitter {
    /// A sequence from `seed` (not zero).
    pub fn new(seed: u64) -> Self {
        Jitter(seed | 1)
    }

    /// The next value below `bound`.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound.max(1)
    }
}
