//! [`Fixture`] and [`Server`]: what an engine provides to run the shared suites (see the
//! crate docs), and which fault port each test takes ([`ports`]).

use alkstore_kit::{CommonConfig, Locks, Protocol};

/// The engine's config type.
pub type Config<F> = <<F as Fixture>::Engine as Protocol>::Config;

/// The engine's store.
pub type Store<F> = Locks<<F as Fixture>::Engine>;

/// How many distinct [`Fixture::FAULT_PORTS`] the suites use (see [`ports`]).
pub const PORTS_NEEDED: usize = 8;

/// Which of [`Fixture::FAULT_PORTS`] each test takes, by index.
pub mod ports {
    /// The contract's validation test (a server started and killed: a dead store).
    pub const DEAD: usize = 0;
    /// A holder process killed with SIGKILL.
    pub const KILLED_HOLDER: usize = 1;
    /// The server killed and started again.
    pub const RESTART: usize = 2;
    /// The server frozen (SIGSTOP): calls answer `Unavailable` within the `io_timeout`, and
    /// what they left is undone once it thaws (the tests take turns on it).
    pub const PAUSED: usize = 3;
    /// The server frozen during bounded waits.
    pub const STALLED_WAIT: usize = 4;
    /// Every client session killed under a waiter.
    pub const KILLED_SESSIONS: usize = 5;
    /// A waiter process killed with SIGKILL.
    pub const CRASHED_WAITER: usize = 6;
    /// Sessions counted while a thousand calls are dropped; also the tracing test's dead
    /// server (another binary).
    pub const SESSIONS: usize = 7;
}

/// An engine with a server, as the shared suites see it.
pub trait Fixture: Sync + 'static {
    /// The engine.
    type Engine: Protocol;
    /// A server of a test's own.
    type Server: Server;

    /// The ports the fault tests may start servers on: at least [`PORTS_NEEDED`], distinct,
    /// never the shared server's (indexed by the constants of [`ports`]).
    const FAULT_PORTS: &'static [u16];

    /// Whether a server killed and started again still has the leases it held (PostgreSQL:
    /// yes; a Redis without persistence: no, and its tokens must increase anyway).
    const RESTART_KEEPS_DATA: bool;

    /// The shared test server's URL (`make test-<engine>` sets it). Panics, naming the make
    /// target, when it is not set.
    fn url(&self) -> String;

    /// The engine's config in `scope` (a namespace, a schema), with the shared settings of
    /// `common` (limits, `io_timeout`, waiter heartbeat).
    fn config(&self, scope: &str, common: CommonConfig) -> Config<Self>;

    /// Starts a server of a test's own, in a scratch dir, on 127.0.0.1:`port`, and waits until
    /// it answers. Panics if something already listens there (never touches another server).
    fn start_server(&self, port: u16) -> Self::Server;
}

/// A server of a test's own (see [`Fixture::start_server`]). Dropping it kills it by pid
/// (also when the test panics) and removes its scratch dir.
pub trait Server: Send + Sync {
    /// Its URL.
    fn url(&self) -> String;
    /// SIGKILL (after SIGCONT, in case it is frozen), and waits until it is gone.
    fn kill(&mut self);
    /// Starts it again on the same port (and data dir) after [`kill`](Self::kill).
    fn launch(&mut self);
    /// SIGSTOP: it keeps its connections but answers nothing.
    fn pause(&self);
    /// SIGCONT.
    fn resume(&self);
    /// Ends every client session (Redis `CLIENT KILL`, PostgreSQL `pg_terminate_backend`),
    /// the pub/sub or LISTEN ones included.
    fn kill_sessions(&self);
    /// How many client sessions it has accepted since it started (Redis `INFO stats`
    /// `total_connections_received`); reading it may itself count as one.
    fn sessions_accepted(&self) -> u64;
}
