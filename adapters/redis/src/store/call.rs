//! Running one script on the server: EVALSHA, its source by EVAL where the server or node
//! does not have it, the one retry after a lost reply or connection, and the replica ack.

#[cfg(feature = "test-clock")]
use std::sync::atomic::Ordering;

use alkstore_kit::unavailable;
use alkstore_mem::LockError;
use redis::FromRedisValue;

use super::Redis;
use crate::scripts::{Lua, ToRedisArgsDyn, call, eval, evalsha, failed, no_script};

/// Whether a call that failed with `e` is tried once more: the connection died (the server
/// may have run the script; every script is idempotent, see [`Redis::run`]), or a replica
/// refused the write (a master demoted by a failover: nothing ran).
fn retryable(e: &redis::RedisError) -> bool {
    e.is_connection_dropped()
        || e.is_io_error()
        || e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly)
}

impl Redis {
    /// Runs `script` on `name` with `args`; every failure (refused, a script error) is
    /// [`LockError::Unavailable`]. The kit bounds it by the `io_timeout`.
    pub(crate) async fn run<T: FromRedisValue>(
        &self,
        script: &Lua,
        name: &str,
        args: &[&dyn ToRedisArgsDyn],
    ) -> Result<T, LockError> {
        let mut conn = self.conn.clone();
        #[cfg(feature = "test-clock")]
        let lose_reply = self.lose_next_reply.swap(false, Ordering::SeqCst);
        #[cfg(not(feature = "test-clock"))]
        let lose_reply = false;
        let first = call(&mut conn, script, &self.prefix, self.cluster(), name, args).await;
        match first {
            // The test hook: the script ran, its reply is dropped, as by a connection that
            // died after the server ran it.
            Ok(_) if lose_reply => {
                call(&mut conn, script, &self.prefix, self.cluster(), name, args).await
            }
            // The connection was found dead (killed, or the server restarted): the manager
            // reconnects, and the call is tried once more on the new connection. The server
            // may have run it before the connection died (the reply was lost), so every
            // script is idempotent: renew, is_held, holder and cancel are by nature;
            // try_lock and acquire pass a request id that a retry finds in its own lease and
            // returns as granted; release leaves a short-lived mark under its request id, so
            // a retry still answers true.
            // Through sentinels, a demoted master answers READONLY (nothing ran): the
            // connection is forgotten and the retry asks the sentinels for the master again.
            Err(e) if retryable(&e) => {
                call(&mut conn, script, &self.prefix, self.cluster(), name, args).await
            }
            other => other,
        }
        .map_err(|e| failed(&e))
    }

    /// Runs `script` as [`run`](Self::run) does; with a replica ack configured
    /// ([`RedisConfig::with_replica_ack`]), `WAIT n ms` follows it in one pipeline on the same
    /// connection, so that it waits for this very script's writes (a `WAIT` sent alone could
    /// land on a new connection after a reconnection, whose offset is 0, and count replicas
    /// that never saw the script). Answers the script's reply and the replicas that
    /// acknowledged (`None` without a replica ack); the caller decides whether its reply needed
    /// them ([`acked`](Self::acked)).
    pub(crate) async fn run_waited<T: FromRedisValue>(
        &self,
        script: &Lua,
        name: &str,
        args: &[&dyn ToRedisArgsDyn],
    ) -> Result<(T, Option<u32>), LockError> {
        let Some((replicas, timeout)) = self.config.replica_ack() else {
            return Ok((self.run(script, name, args).await?, None));
        };
        // Below the io_timeout, so that a refusal is told as such, not as a timeout.
        let wait_ms = timeout
            .min(self.config.io_timeout() * 3 / 4)
            .as_millis()
            .clamp(1, u128::from(u32::MAX));
        let wait_ms = u64::try_from(wait_ms).unwrap_or(u64::MAX);
        let waited = |script: redis::Cmd| {
            let mut pipe = redis::pipe();
            pipe.add_command(script)
                .cmd("WAIT")
                .arg(replicas)
                .arg(wait_ms);
            pipe
        };
        let mut pipe = waited(evalsha(script, &self.prefix, self.cluster(), name, args));
        let mut conn = self.conn.clone();
        let mut by_source = false;
        let mut retried = false;
        loop {
            match pipe.query_async::<(T, u32)>(&mut conn).await {
                Ok((reply, acked)) => return Ok((reply, Some(acked))),
                // The server does not have the script (first use, a restart, SCRIPT FLUSH, a
                // promoted replica): the pipeline again with its source (nothing of it ran).
                Err(e) if !by_source && no_script(&e) => {
                    by_source = true;
                    pipe = waited(eval(script, &self.prefix, self.cluster(), name, args));
                }
                // As in `run`: the manager reconnects, and the idempotent script runs again.
                Err(e) if !retried && retryable(&e) => {
                    retried = true;
                }
                Err(e) => return Err(failed(&e)),
            }
        }
    }

    /// `Ok` when `acked` replicas are enough for a reply that tells a caller it holds a lease
    /// (`None`: no replica ack configured); else [`LockError::Unavailable`] saying how many.
    pub(super) fn acked(&self, acked: Option<u32>, what: &str) -> Result<(), LockError> {
        match (self.config.replica_ack(), acked) {
            (Some((replicas, timeout)), Some(acked)) if acked < replicas => {
                Err(unavailable(format!(
                    "redis: {acked} of {replicas} replicas acknowledged the {what} within {timeout:?}; not held"
                )))
            }
            _ => Ok(()),
        }
    }
}
