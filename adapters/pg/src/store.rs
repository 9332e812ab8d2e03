//! [`Pg`]: the PostgreSQL engine under the kit: the pool, the schema, the sweep, and the
//! [`Protocol`] operations, one server function each.

use core::fmt;
use std::sync::Arc;
use std::time::Duration;

use alkstore_kit::{Grant, Held, Protocol, Reply, Step, StepReply, WaitDeadline};
use alkstore_mem::{LeaseInfo, LockError, Snapshot, Timestamp};
use tokio::task::AbortHandle;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::config::PgConfig;
use crate::listener::{PgFallback, PgListener};
use crate::op::Op;
use crate::pool::{Fail, Pool};
use crate::sql::Schema;
use crate::wire::{
    down, field, from_us, lease_row, micros, numbers, owner_to_sql, to_us, token_param,
};

/// The answer of a `try_lock`: a grant, or busy.
type Granted = Result<Reply<Option<Grant>>, LockError>;
/// The answer of a renewal: the new deadline, or `None` when the lease is gone.
type Renewed = Result<Reply<Option<Timestamp>>, LockError>;

/// `wd` of a step: before the first answer (the server sets the wait deadline).
const WD_FIRST: i64 = -1;
/// `wd` of a step whose wait is over by the client's bound: the server ends the wait.
const WD_OVER: i64 = -2;

/// The PostgreSQL engine: what [`PgLocks`](crate::PgLocks) (`alkstore_kit::Locks<Pg>`) runs
/// on. A small connection pool, the schema's identifiers, the config, and the 30 s sweep
/// (aborted when the engine is dropped). [`PgLocks::engine`](alkstore_kit::Locks::engine)
/// gives it; it has nothing for users beyond [`schema`](Self::schema).
pub struct Pg {
    pool: Arc<Pool>,
    schema: Schema,
    config: PgConfig,
    sweep: AbortHandle,
}

impl Pg {
    /// The schema this engine keeps its tables and functions in.
    pub fn schema(&self) -> &str {
        &self.schema.name
    }

    /// The schema's quoted identifier (for the fence's SQL).
    pub(crate) fn ident(&self) -> &str {
        &self.schema.ident
    }

    /// Runs `op` with `params` on the pool; every failure is `Unavailable` except a row
    /// locked by another transaction ([`Fail::Locked`]).
    async fn call(&self, op: Op, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, Fail> {
        self.pool.call(op, params).await
    }

    /// [`call`](Self::call) with a locked row as `Unavailable` too.
    async fn rows(&self, op: Op, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, LockError> {
        Ok(self.call(op, params).await?)
    }

    /// The `bigint[]` reply of `op`.
    async fn numbers(&self, op: Op, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<i64>, LockError> {
        numbers(&self.rows(op, params).await?)
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        self.sweep.abort();
    }
}

impl fmt::Debug for Pg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pg")
            .field("schema", &self.schema.name)
            .field("pool_size", &self.config.pool_size())
            .finish_non_exhaustive()
    }
}

impl Protocol for Pg {
    const NAME: &'static str = "postgres";
    // `cancel.sql` records the id in `cancelled` (kept ten minutes), which `try_lock.sql`, `fast.sql`
    // and `acquire.sql` check.
    const WITHDRAWAL_LEAVES_MARK: bool = true;

    type Config = PgConfig;
    type Fallback = PgFallback;
    type Listener = PgListener;

    fn config(&self) -> &PgConfig {
        &self.config
    }

    /// Connects with `config`. The schema is created with its tables and functions when it
    /// is missing: by a versioned migration in one transaction under an advisory lock, so
    /// several processes may connect at once; a schema installed earlier is checked (its
    /// version, and that it was installed by a build with the same clock). Every slot of the
    /// pool is opened and prepared before it answers, all within the `io_timeout`, and the
    /// sweep starts on the current runtime. `Unavailable` when the server cannot be reached within the `io_timeout`, the
    /// url is malformed, the schema name is not one this engine uses
    /// ([`PgConfig::check_schema`]), the server is a hot standby, the database is not UTF8,
    /// the schema is at a newer version or installed by a build with the other clock, the
    /// connections go through a transaction pooler (PgBouncer's `pool_mode = transaction`:
    /// the error says to use `session`), or the
    /// role lacks a right it needs (to install or upgrade the schema, or to use it: the error
    /// says so; see [`install`](crate::install)).
    async fn connect(url: &str, config: PgConfig) -> Result<Self, LockError> {
        let (pool, schema) = crate::admin::pool_for(url, &config, config.pool_size())?;
        let io = config.io_timeout();
        let migrate = async {
            // A second connection, for the pooler check, opens while the schema is checked.
            let (client, other) = futures_lite::future::zip(
                async {
                    let mut client = pool.connect().await?;
                    crate::admin::migrate(&mut client, &schema).await?;
                    Ok::<_, LockError>(client)
                },
                pool.connect(),
            )
            .await;
            let client = client?;
            crate::pooler::check_session(&client, other?).await?;
            pool.warm(client).await;
            Ok::<(), LockError>(())
        };
        tokio::time::timeout(io, migrate)
            .await
            .map_err(|_| crate::admin::timed_out(&pool, &schema, io))?
            .map_err(crate::pooler::explain)?;
        let pool = Arc::new(pool);
        let sweep = crate::sweep::spawn_sweeper(Arc::downgrade(&pool));
        Ok(Pg {
            pool,
            schema,
            config,
            sweep,
        })
    }

    /// `try_lock(name, owner, ttl, rid)`; a row locked by a fenced transaction beyond the
    /// lock wait is busy.
    async fn try_lock(&self, name: &str, owner: &str, ttl: Duration, rid: &str) -> Granted {
        let owner = owner_to_sql(owner);
        let params: [&(dyn ToSql + Sync); 4] = [&name, &owner, &micros(ttl), &rid];
        let reply = match self.pool.try_lock(name, &params).await {
            Ok(rows) => numbers(&rows)?,
            Err(Fail::Locked) => {
                // Nothing ran: busy, with no reading of the clock (none is needed for None).
                let now = Timestamp::from_nanos(0);
                return Ok(Reply { value: None, now });
            }
            Err(Fail::Down(err)) => return Err(err),
        };
        if field(&reply, 0)? != 1 {
            let now = from_us(field(&reply, 2)?);
            return Ok(Reply { value: None, now });
        }
        Ok(Reply {
            value: Some(grant(&reply)?),
            now: from_us(field(&reply, 3)?),
        })
    }

    /// One `acquire(name, owner, ttl, id, wait, wd, hb)` step: `{1, token, deadline, now}`
    /// granted, `{2, ..}` over, `{0, wd, head holder, now}` queued (0: no bound / not first).
    async fn step(&self, step: Step<'_>) -> Result<StepReply, LockError> {
        let owner = owner_to_sql(step.owner);
        let wait = step.wait_left.map_or(-1, micros);
        let wd = match step.deadline {
            WaitDeadline::First => WD_FIRST,
            WaitDeadline::Known(at) => at.map_or(0, to_us),
            WaitDeadline::Over => WD_OVER,
        };
        let (ttl, hb) = (micros(step.ttl), micros(step.heartbeat_expiry));
        let params: [&(dyn ToSql + Sync); 7] =
            [&step.name, &owner, &ttl, &step.id, &wait, &wd, &hb];
        let reply = match self.call(Op::Acquire, &params).await {
            Ok(rows) => numbers(&rows)?,
            Err(Fail::Locked) => return Ok(StepReply::Locked),
            Err(Fail::Down(err)) => return Err(err),
        };
        let now = from_us(field(&reply, 3)?);
        let nonzero = |at: i64| (at != 0).then(|| from_us(at));
        Ok(match field(&reply, 0)? {
            1 => StepReply::Granted(Reply {
                value: grant(&reply)?,
                now,
            }),
            2 => StepReply::Over,
            _ => StepReply::Queued {
                wait_deadline: nonzero(field(&reply, 1)?),
                head_holder: nonzero(field(&reply, 2)?),
                now,
            },
        })
    }

    /// `cancel(name, id, mark)`: see `sql/cancel.sql`.
    async fn withdraw(&self, name: &str, id: &str, unanswered: bool) -> Result<(), LockError> {
        self.rows(Op::Cancel, &[&name, &id, &unanswered]).await?;
        Ok(())
    }

    async fn renew(&self, name: &str, token: u64, ttl: Duration) -> Renewed {
        let params: [&(dyn ToSql + Sync); 3] = [&name, &token_param(token), &micros(ttl)];
        let reply = self.numbers(Op::Renew, &params).await?;
        let renewed = field(&reply, 0)? == 1;
        Ok(Reply {
            value: renewed.then(|| field(&reply, 1).map(from_us)).transpose()?,
            now: from_us(field(&reply, 2)?),
        })
    }

    /// `release(name, token)` (by token: a second run answers `false`, never frees a newer
    /// lease; `rid` is not needed).
    async fn release(&self, name: &str, token: u64, _rid: &str) -> Result<bool, LockError> {
        let rows = self
            .rows(Op::Release, &[&name, &token_param(token)])
            .await?;
        let released: i64 = rows
            .first()
            .and_then(|row| row.try_get(0).ok())
            .ok_or_else(|| down("unexpected reply from a lock function"))?;
        Ok(released == 1)
    }

    async fn is_held(&self, name: &str, token: u64) -> Result<Reply<Held>, LockError> {
        let reply = self
            .numbers(Op::IsHeld, &[&name, &token_param(token)])
            .await?;
        Ok(Reply {
            value: Held {
                live: field(&reply, 0)? == 1,
                deadline: from_us(field(&reply, 1)?),
            },
            now: from_us(field(&reply, 2)?),
        })
    }

    async fn holder(&self, name: &str) -> Result<Option<LeaseInfo>, LockError> {
        let rows = self.rows(Op::Holder, &[&name]).await?;
        Ok(lease_row(name, &rows)?.0)
    }

    /// Refuses at once (`Unavailable`) while a fenced transaction holds the name.
    async fn force_release(&self, name: &str) -> Result<Option<LeaseInfo>, LockError> {
        let rows = self.rows(Op::ForceRelease, &[&name]).await?;
        Ok(lease_row(name, &rows)?.0)
    }

    /// Every live lease and queued waiter, page by page (10,000 rows a page, keyset by name,
    /// each page one statement within the `io_timeout`; see `src/snapshot.rs`).
    async fn snapshot(&self) -> Result<Snapshot, LockError> {
        crate::snapshot::read(&self.pool).await
    }

    #[cfg(feature = "test-clock")]
    async fn advance_test_clock(&self, by: Duration) -> Result<(), LockError> {
        self.rows(Op::AdvanceClock, &[&micros(by)]).await?;
        Ok(())
    }

    #[cfg(not(feature = "test-clock"))]
    async fn advance_test_clock(&self, _by: Duration) -> Result<(), LockError> {
        Err(down(
            "alkstore-pg was built without its `test-clock` feature",
        ))
    }

    fn listener(&self) -> PgListener {
        PgListener::new(
            self.pool.config().clone(),
            self.pool.pinned(),
            self.schema.channel.clone(),
            self.config.io_timeout(),
        )
    }

    fn fallback(&self) -> PgFallback {
        PgFallback::new(self.pool.config().clone(), self.pool.pinned(), &self.schema)
    }
}

/// The `{_, token, deadline, ..}` of a grant.
fn grant(reply: &[i64]) -> Result<Grant, LockError> {
    Ok(Grant {
        token: u64::try_from(field(reply, 1)?).unwrap_or(0),
        deadline: from_us(field(reply, 2)?),
    })
}
