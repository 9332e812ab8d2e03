//! [`SentinelConn`]: the connection to the master that sentinels name, asked again at most
//! once a second (in a task of its own) and after a failure that may mean the master moved.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{AsyncConnectionConfig, Cmd, Pipeline, RedisError, RedisFuture, RedisResult, Value};
use tokio::time::Instant;

use crate::sentinel::{RECHECK, Sentinels, is_silence};

/// Whether `e` means the connection may no longer lead to the master: it failed, timed out,
/// or the server is a replica now (`READONLY`: a demoted master; nothing of the call ran).
fn leads_nowhere(e: &RedisError) -> bool {
    e.is_connection_dropped()
        || e.is_io_error()
        || e.is_timeout()
        || e.is_unrecoverable_error()
        || e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly)
}

/// A multiplexed connection to the master that sentinels name, made on first use and after
/// each failure: a call that fails as [`leads_nowhere`] says (or is dropped before it ends,
/// as by a timeout) forgets the connection, and the next call asks the sentinels again.
#[derive(Clone)]
pub(crate) struct SentinelConn {
    shared: Arc<Shared>,
}

/// The connection in use, its generation (a failure forgets only the connection it
/// happened on, never a newer one), the master's address, and when the sentinels last
/// named it.
#[derive(Default)]
struct Current {
    generation: u64,
    conn: Option<MultiplexedConnection>,
    addr: String,
    checked: Option<Instant>,
    /// Whether a recheck runs behind the calls.
    rechecking: bool,
}

struct Shared {
    sentinels: Arc<Sentinels>,
    config: AsyncConnectionConfig,
    /// How long a call may go on retrying through a failover.
    io: Duration,
    /// The connection in use.
    current: Mutex<Current>,
    /// Held while a connection is being made, so that many calls after a failover ask the
    /// sentinels once.
    connecting: tokio::sync::Mutex<()>,
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, Current> {
        self.current.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Asks the sentinels which server is the master (each within a short timeout) and
    /// answers the connection to it: the one in use when they name its server, or cannot be
    /// reached (asked again after [`RECHECK`]); a new one when they name another (a
    /// failover: the old master may still take writes from clients that stay on it until
    /// Sentinel demotes it, up to its 10 s `INFO` period later), or when there is none.
    /// Called with `connecting` held.
    async fn ask(&self) -> RedisResult<(u64, MultiplexedConnection)> {
        let named = self.sentinels.master().await;
        // Decided under the lock, which no `.await` may hold.
        let client = {
            let mut state = self.state();
            match (named, state.conn.clone()) {
                (Err(_), Some(conn)) => {
                    state.checked = Some(Instant::now());
                    return Ok((state.generation, conn));
                }
                (Err(e), None) => return Err(e),
                (Ok(client), Some(conn))
                    if state.addr == client.get_connection_info().addr().to_string() =>
                {
                    state.checked = Some(Instant::now());
                    return Ok((state.generation, conn));
                }
                (Ok(client), _) => client,
            }
        };
        let addr = client.get_connection_info().addr().to_string();
        let conn = client
            .get_multiplexed_async_connection_with_config(&self.config)
            .await?;
        let mut state = self.state();
        state.generation += 1;
        state.conn = Some(conn.clone());
        state.addr = addr;
        state.checked = Some(Instant::now());
        Ok((state.generation, conn))
    }
}

/// Clears [`Current::rechecking`] when dropped: the recheck ended, or its task was dropped.
struct Rechecked(Arc<Shared>);

impl Drop for Rechecked {
    fn drop(&mut self) {
        self.0.state().rechecking = false;
    }
}

impl SentinelConn {
    /// Connects to the master the sentinels name now, each step within `io_timeout`.
    pub(crate) async fn connect(sentinels: Arc<Sentinels>, io: Duration) -> RedisResult<Self> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(io))
            .set_response_timeout(Some(io));
        let conn = SentinelConn {
            shared: Arc::new(Shared {
                sentinels,
                config,
                io,
                current: Mutex::new(Current::default()),
                connecting: tokio::sync::Mutex::new(()),
            }),
        };
        conn.on_master(|_| async { Ok(()) }).await?;
        Ok(conn)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Current> {
        self.shared.state()
    }

    /// The connection in use, if the sentinels named its master less than [`RECHECK`] ago.
    fn fresh(&self) -> Option<(u64, MultiplexedConnection)> {
        let state = self.state();
        let fresh = state.checked.is_some_and(|at| at.elapsed() < RECHECK);
        let conn = state.conn.clone().filter(|_| fresh)?;
        Some((state.generation, conn))
    }

    /// The connection in use, fresh or not, once a recheck of the sentinels is under way in
    /// a task of its own (started here unless one runs): a call never waits for the
    /// sentinels while there is a connection (a frozen sentinel would hold it up to its
    /// timeout). `None` when there is no connection, or no runtime to run the task on.
    fn recheck_behind(&self) -> Option<(u64, MultiplexedConnection)> {
        let handle = tokio::runtime::Handle::try_current().ok()?;
        let mut state = self.state();
        let conn = state.conn.clone()?;
        let generation = state.generation;
        let start = !state.rechecking;
        state.rechecking = true;
        // Spawned with the state unlocked: on a runtime that is shutting down, `spawn` drops
        // the task at once, and `Rechecked`'s drop locks the state (under the lock, that
        // thread waited on itself for ever: seen at the end of the Sentinel suite).
        drop(state);
        if start {
            // Made out here, so that a task dropped unpolled (its runtime shutting down)
            // still clears the flag.
            let done = Rechecked(self.shared.clone());
            handle.spawn(async move {
                let _connecting = done.0.connecting.lock().await;
                let _ = done.0.ask().await;
            });
        }
        Some((generation, conn))
    }

    /// The connection in use, once the sentinels have named its master within [`RECHECK`]
    /// (rechecked behind the calls, see [`recheck_behind`](Self::recheck_behind)); a new
    /// one, made in the call, when there is none.
    async fn current(&self) -> RedisResult<(u64, MultiplexedConnection)> {
        if let Some(fresh) = self.fresh() {
            return Ok(fresh);
        }
        if let Some(in_use) = self.recheck_behind() {
            return Ok(in_use);
        }
        let _connecting = self.shared.connecting.lock().await;
        if let Some(fresh) = self.fresh() {
            return Ok(fresh);
        }
        // Boxed: the future of asking the sentinels is deep, and a store's `connect` holds it.
        Box::pin(self.shared.ask()).await
    }

    /// Forgets connection `generation`, if it is still the one in use.
    fn forget(&self, generation: u64) {
        let mut state = self.state();
        if state.generation == generation {
            state.conn = None;
        }
    }

    /// Runs `call` on the connection in use; forgets it when the call fails as
    /// [`leads_nowhere`] says or is dropped before it ends. While there is no master to reach
    /// (a failover under way: the sentinels still name the dead one, or nobody yet) or the
    /// call fails that way, it asks the sentinels again and retries, with a backoff of 20 ms
    /// doubling to 500 ms, for up to the `io_timeout`; then it answers the last error. Every
    /// script is idempotent (see `Redis::run`), so running one again is safe.
    async fn on_master<T, F, Fut>(&self, call: F) -> RedisResult<T>
    where
        F: Fn(MultiplexedConnection) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let until = Instant::now() + self.shared.io;
        let mut pause = Duration::from_millis(20);
        loop {
            let (result, retry) = match self.current().await {
                Ok((generation, conn)) => {
                    let mut unfinished = Unfinished {
                        conn: self,
                        generation,
                        armed: true,
                    };
                    let result = call(conn).await;
                    unfinished.armed = matches!(&result, Err(e) if leads_nowhere(e));
                    let retry = unfinished.armed;
                    (result, retry)
                }
                // No master found or reached: ask again, unless no sentinel answered (they
                // would not answer sooner now).
                Err(e) => {
                    let again = !is_silence(&e);
                    (Err(e), again)
                }
            };
            if !retry || Instant::now() + pause >= until {
                return result;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }

    pub(crate) fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(self.on_master(move |mut conn| async move { conn.req_packed_command(cmd).await }))
    }

    pub(crate) fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(self.on_master(move |mut conn| async move {
            conn.req_packed_commands(cmd, offset, count).await
        }))
    }

    pub(crate) fn get_db(&self) -> i64 {
        self.state().conn.as_ref().map_or(0, |conn| conn.get_db())
    }
}

/// Forgets its connection when dropped armed: the call failed for want of a master, or it
/// was dropped before it ended.
struct Unfinished<'a> {
    conn: &'a SentinelConn,
    generation: u64,
    armed: bool,
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.conn.forget(self.generation);
        }
    }
}
