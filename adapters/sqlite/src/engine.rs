//! [`Sqlite`]: the engine (the kit's [`Protocol`]), its connection thread, and its clean-up
//! path for a handle dropped with no runtime.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use alkstore_kit::{Fallback, Grant, Held, Job, Protocol, Reply, Step, StepReply, unavailable};
use alkstore_mem::{LeaseInfo, LockError, Snapshot, Timestamp};
use tokio::sync::oneshot;

use crate::busy::{DbError, duration_us};
use crate::config::SqliteConfig;
use crate::db::{Db, Tx};
use crate::listen::{Doorbell, Nudge};
use crate::location::parse_location;
use crate::schema::FenceSql;
use crate::stmts::Statements;
use crate::tasks::Task;

/// The SQLite engine: one database file shared by the processes of one host.
///
/// Not used directly: [`SqliteLocks`](crate::SqliteLocks) (`Locks<Sqlite>`) is the store.
/// It owns one connection, on a thread of its own, that runs every operation of the store
/// in turn, each in one `BEGIN IMMEDIATE` transaction: blocking SQLite calls never run on
/// an async worker thread. Dropping the last clone of the store ends that thread.
pub struct Sqlite {
    tasks: Mutex<mpsc::Sender<Task>>,
    path: PathBuf,
    config: SqliteConfig,
    nudge: Arc<Nudge>,
    /// The statements of `lock.fence(&tx)`, for the namespace (made once, not per check).
    fence_sql: FenceSql,
}

impl fmt::Debug for Sqlite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sqlite")
            .field("path", &self.path)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// How long an operation may wait for SQLite's write lock: nine tenths of the io_timeout, so
/// that it answers (busy) before the kit gives up on it.
fn budget(io: Duration) -> Duration {
    io - io / 10
}

impl Sqlite {
    /// Opens the file at `path` with `config` (see [`open_with`](crate::open_with)).
    ///
    /// # Errors
    /// `LockError::Unavailable` with the reason when the file cannot keep the promise.
    ///
    /// # Example
    /// ```
    /// use alkstore_sqlite::{Sqlite, SqliteConfig, SqliteLocks};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let dir = std::env::temp_dir().join(format!("alkstore-sqlite-doc-engine-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let engine = Sqlite::open(dir.join("locks.db"), SqliteConfig::new()).await?;
    /// let locks = SqliteLocks::from_engine(engine);
    /// assert!(locks.holder("job").await?.is_none());
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), alkstore_mem::LockError>(()) }).unwrap();
    /// ```
    pub async fn open(path: impl AsRef<Path>, config: SqliteConfig) -> Result<Sqlite, LockError> {
        // The file's own path (a symlink followed): the connections and the watcher of its
        // -wal and -shm all use it, as SQLite does.
        let given = path.as_ref();
        let path = crate::location::resolve(given)
            .map_err(|reason| unavailable(format!("sqlite: {}: {reason}", given.display())))?;
        let (tx, rx) = mpsc::channel::<Task>();
        let (ready_tx, ready_rx) = oneshot::channel();
        let nudge = Arc::new(Nudge::default());
        let (p, c, n) = (path.clone(), config.clone(), Arc::clone(&nudge));
        std::thread::Builder::new()
            .name("alkstore-sqlite".into())
            .spawn(move || {
                let db = match Db::open(&p, &c, true) {
                    Ok(db) => {
                        let _ = ready_tx.send(Ok(()));
                        db
                    }
                    Err(err) => {
                        let _ = ready_tx.send(Err(err));
                        return;
                    }
                };
                let st = Statements::new(&db.conn, &db.sql);
                while let Some(task) = crate::tasks::next(&rx) {
                    task(&db, &st);
                    if db.rang.take() {
                        n.nudge();
                    }
                }
            })
            .map_err(|err| unavailable(format!("sqlite: cannot start its thread: {err}")))?;
        match ready_rx.await {
            Ok(Ok(())) => Ok(Sqlite {
                tasks: Mutex::new(tx),
                path,
                fence_sql: FenceSql::new(config.namespace()),
                config,
                nudge,
            }),
            Ok(Err(err)) => Err(err),
            Err(_) => Err(unavailable(
                "sqlite: the connection thread stopped while opening",
            )),
        }
    }

    /// The statements of `lock.fence(&tx)` (see [`fence`](crate::fence)).
    pub(crate) fn fence_sql(&self) -> &FenceSql {
        &self.fence_sql
    }

    /// The database file (a symlink given to `open` is resolved to the file it names).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `op` in one transaction on the connection thread; `name` is the lock it is about
    /// and `rid` its request id (`""` for none: see [`Db::write`]).
    async fn run<T: Send + 'static>(
        &self,
        name: String,
        rid: &str,
        op: impl FnOnce(&mut Tx<'_, '_>, &str) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, DbError> {
        let rid = rid.to_owned();
        let called = Instant::now();
        let until = called + budget(self.config.io_timeout());
        let (tx, rx) = oneshot::channel();
        let task: Task = Box::new(move |db: &Db, st: &Statements<'_>| {
            let answer = catch_unwind(AssertUnwindSafe(|| {
                db.write(st, until, &name, &rid, |tx| op(tx, &name))
            }));
            let answer = match answer {
                // The wait counts from the call, queued behind other work or not.
                Ok(Err(DbError::Busy(_))) => Err(DbError::Busy(called.elapsed())),
                Ok(answer) => answer,
                Err(_) => {
                    Db::rollback(st);
                    Err(DbError::Other("an operation panicked"))
                }
            };
            let _ = tx.send(answer);
        });
        let sent = self
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(task);
        if sent.is_err() {
            return Err(DbError::Other("the connection thread has stopped"));
        }
        rx.await.unwrap_or_else(|_| {
            Err(DbError::Other(
                "the connection thread stopped during the call",
            ))
        })
    }

    /// Raises lease time in the file to at least `to` (µs), in a transaction of its own
    /// queued on the connection thread and not awaited (it waits for the write lock up to
    /// the io_timeout's budget): how a lapse seen by a fence, whose transaction is rolled
    /// back, is recorded.
    pub(crate) fn raise_floor(&self, to: i64) {
        let until = Instant::now() + budget(self.config.io_timeout());
        let task: Task = Box::new(move |db: &Db, st: &Statements<'_>| {
            let raised = catch_unwind(AssertUnwindSafe(|| {
                db.write(st, until, "", "", |tx| {
                    tx.now = tx.now.max(to);
                    Ok(())
                })
            }));
            if raised.is_err() {
                Db::rollback(st);
            }
        });
        let _ = self
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(task);
    }

    /// [`run`](Self::run), its errors as the contract's.
    async fn op<T: Send + 'static>(
        &self,
        name: &str,
        rid: &str,
        op: impl FnOnce(&mut Tx<'_, '_>, &str) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, LockError> {
        let name = name.to_owned();
        self.run(name, rid, op)
            .await
            .map_err(DbError::into_lock_error)
    }
}

impl Protocol for Sqlite {
    type Config = SqliteConfig;
    type Listener = Doorbell;
    type Fallback = Cleanup;

    const NAME: &'static str = "sqlite";
    // `withdraw` records the id in the `cancelled` table (kept ten minutes), which every
    // operation carrying a request id checks in its first statement.
    const WITHDRAWAL_LEAVES_MARK: bool = true;

    async fn connect(url: &str, config: SqliteConfig) -> Result<Self, LockError> {
        let path = parse_location(url)?;
        Sqlite::open(path, config).await
    }

    fn config(&self) -> &SqliteConfig {
        &self.config
    }

    async fn try_lock(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
        rid: &str,
    ) -> Result<Reply<Option<Grant>>, LockError> {
        let (owner, id) = (owner.to_owned(), rid.to_owned());
        let ttl = duration_us(ttl);
        self.op(name, rid, move |tx, name| {
            tx.try_lock(name, &owner, ttl, &id)
        })
        .await
    }

    async fn step(&self, step: Step<'_>) -> Result<StepReply, LockError> {
        let (name, owner, id) = (
            step.name.to_owned(),
            step.owner.to_owned(),
            step.id.to_owned(),
        );
        let (ttl, wait_left, deadline, heartbeat_expiry) = (
            step.ttl,
            step.wait_left,
            step.deadline,
            step.heartbeat_expiry,
        );
        let answer = self
            .run(name, step.id, move |tx, name| {
                tx.step(&Step {
                    name,
                    owner: &owner,
                    ttl,
                    id: &id,
                    wait_left,
                    deadline,
                    heartbeat_expiry,
                })
            })
            .await;
        match answer {
            Ok(reply) => Ok(reply),
            // No wait at all (`acquire(..).timeout(ZERO)`): answered exactly as `try_lock`,
            // which says the file could not be read, not that the name is held.
            Err(err @ DbError::Busy(_)) if wait_left.is_some_and(|left| left.is_zero()) => {
                Err(err.into_lock_error())
            }
            // Somebody's transaction (a fence, most likely) holds the write lock: the waiter
            // keeps its place and tries again after a short pause.
            Err(DbError::Busy(_)) => Ok(StepReply::Locked),
            Err(err) => Err(err.into_lock_error()),
        }
    }

    async fn withdraw(&self, name: &str, id: &str, unanswered: bool) -> Result<(), LockError> {
        let id = id.to_owned();
        self.op(name, "", move |tx, name| tx.withdraw(name, &id, unanswered))
            .await
    }

    async fn renew(
        &self,
        name: &str,
        token: u64,
        ttl: Duration,
    ) -> Result<Reply<Option<Timestamp>>, LockError> {
        let ttl = duration_us(ttl);
        self.op(name, "", move |tx, name| tx.renew(name, token, ttl))
            .await
    }

    async fn release(&self, name: &str, token: u64, _rid: &str) -> Result<bool, LockError> {
        self.op(name, "", move |tx, name| tx.release(name, token))
            .await
    }

    async fn is_held(&self, name: &str, token: u64) -> Result<Reply<Held>, LockError> {
        self.op(name, "", move |tx, name| tx.is_held(name, token))
            .await
    }

    async fn holder(&self, name: &str) -> Result<Option<LeaseInfo>, LockError> {
        self.op(name, "", move |tx, name| tx.holder(name)).await
    }

    async fn force_release(&self, name: &str) -> Result<Option<LeaseInfo>, LockError> {
        self.op(name, "", move |tx, name| tx.force_release(name))
            .await
    }

    async fn snapshot(&self) -> Result<Snapshot, LockError> {
        let io = self.config.io_timeout();
        match tokio::time::timeout(io, self.op("", "", |tx, _| tx.snapshot())).await {
            Ok(answer) => answer,
            Err(_) => Err(unavailable(format!("sqlite did not answer within {io:?}"))),
        }
    }

    #[cfg(feature = "test-clock")]
    async fn advance_test_clock(&self, by: Duration) -> Result<(), LockError> {
        let by = i64::try_from(by.as_micros()).unwrap_or(i64::MAX);
        self.op("", "", move |tx, _| tx.advance(by)).await
    }

    #[cfg(not(feature = "test-clock"))]
    async fn advance_test_clock(&self, _: Duration) -> Result<(), LockError> {
        Err(unavailable(
            "sqlite: this build has no test clock (the `test-clock` feature)",
        ))
    }

    fn listener(&self) -> Doorbell {
        Doorbell::new(
            self.path.clone(),
            self.config.clone(),
            Arc::clone(&self.nudge),
        )
    }

    fn fallback(&self) -> Cleanup {
        Cleanup {
            path: self.path.clone(),
            config: self.config.clone(),
        }
    }
}

/// Runs a clean-up [`Job`] on a connection of its own (a handle dropped with no runtime, or
/// while its runtime shuts down): the kit calls it on a helper thread, where blocking is
/// allowed.
#[derive(Debug)]
pub struct Cleanup {
    path: PathBuf,
    config: SqliteConfig,
}

impl Fallback for Cleanup {
    async fn run(self, job: Job) -> bool {
        let Ok(db) = Db::open(&self.path, &self.config, false) else {
            return false;
        };
        let st = Statements::new(&db.conn, &db.sql);
        let until = Instant::now() + budget(self.config.io_timeout());
        let done = match job {
            Job::Release { name, token, .. } => db
                .write(&st, until, &name, "", |tx| tx.release(&name, token))
                .map(drop),
            Job::Withdraw {
                name,
                id,
                unanswered,
            } => db.write(&st, until, &name, "", |tx| {
                tx.withdraw(&name, &id, unanswered)
            }),
        };
        done.is_ok()
    }
}
