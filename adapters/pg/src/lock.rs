//! [`PgLock`]: a held lease, and its renew, release, watch and fence operations.

use core::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use alkstore_mem::{LeaseInfo, LockError, Timestamp};
use tokio_postgres::GenericClient;

use alkstore_mem::BoxedFuture;
use alkstore_mem::contract::next_renewal;

use crate::compat::{expired, too_short_to_keep_alive, zero_ttl};
use crate::pool::Op;
use crate::store::PgFuture;
use crate::store::PgLocks;
use crate::wire::{Anchor, field, from_us, micros, numbers};

/// The future of [`PgLock::keep_alive`]: resolves only when the lease is lost, with why.
pub type PgKeepAlive<'a> = BoxedFuture<'a, LockError>;
/// The future of [`PgLock::lapsed`]: resolves once the lease is no longer held, with why.
pub type PgLapsed<'a> = BoxedFuture<'a, LockError>;

/// A lease held in PostgreSQL: the handle [`PgLocks::try_lock`] and [`PgLocks::acquire`]
/// hand out.
///
/// Its deadline and ttl follow every renewal, whichever path made it
/// ([`renew`](Self::renew) or [`keep_alive`](Self::keep_alive), which takes `&self`, so the
/// work it guards can read [`token`](Self::token) and [`deadline`](Self::deadline) and call
/// [`is_held`](Self::is_held) or [`fence`](Self::fence) meanwhile).
///
/// Dropping it releases the lease: in a task spawned on the current tokio runtime, or, when
/// there is no runtime or the runtime shuts down before that task ran (a lock dropped as
/// `#[tokio::main]` returns), on a helper thread with a connection of its own, which the drop
/// (or the runtime's shutdown) waits for, up to the `io_timeout`. If the server cannot be
/// reached then, the lease lapses at its deadline. [`release`](Self::release) explicitly is
/// still better: it says whether the lease was live. [`detach`](Self::detach) lets it run to
/// its deadline on purpose.
#[must_use = "dropping a PgLock releases it; call detach() to let the lease run to its deadline"]
pub struct PgLock {
    pub(crate) store: PgLocks,
    pub(crate) name: String,
    owner: String,
    pub(crate) token: u64,
    /// Deadline (ns on the server's clock) and ttl (ns) of the last confirmed renewal.
    deadline: AtomicU64,
    ttl: AtomicU64,
    /// The last reply's reading of the server's clock.
    anchor: Mutex<Anchor>,
    pub(crate) release_on_drop: bool,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl PgLock {
    pub(crate) fn new(
        store: PgLocks,
        name: &str,
        owner: &str,
        token: u64,
        deadline: Timestamp,
        ttl: Duration,
        anchor: Anchor,
    ) -> Self {
        PgLock {
            store,
            name: name.into(),
            owner: owner.into(),
            token,
            deadline: AtomicU64::new(deadline.as_nanos()),
            ttl: AtomicU64::new(nanos(ttl)),
            anchor: Mutex::new(anchor),
            release_on_drop: true,
        }
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The owner the lease was granted to.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The fencing token: larger than every token granted before it on this name, unique in
    /// the schema, and kept by renewals. Pass it to whatever the lock protects; in the same
    /// database, [`fence`](Self::fence) checks it inside your transaction.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// The deadline as of the last grant or renewal (by [`renew`](Self::renew) or
    /// [`keep_alive`](Self::keep_alive)), on the server's clock (nanoseconds since the Unix
    /// epoch by its `clock_timestamp()`): the lease is live while the server's time is
    /// before it.
    pub fn deadline(&self) -> Timestamp {
        Timestamp::from_nanos(self.deadline.load(Ordering::Acquire))
    }

    /// The ttl of the last grant or renewal, as asked: what [`keep_alive`](Self::keep_alive)
    /// renews to. The server cuts a ttl above 100 years to 100 years (so that deadlines stay
    /// well inside a `bigint`); [`deadline`](Self::deadline) is the one it granted.
    pub fn ttl(&self) -> Duration {
        Duration::from_nanos(self.ttl.load(Ordering::Acquire))
    }

    /// This grant as a [`LeaseInfo`], with the current deadline.
    pub fn info(&self) -> LeaseInfo {
        LeaseInfo::new(&self.name, &self.owner, self.token, self.deadline())
    }

    fn anchor(&self) -> Anchor {
        *self.anchor.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_anchor(&self, anchor: Anchor) {
        *self.anchor.lock().unwrap_or_else(PoisonError::into_inner) = anchor;
    }

    fn token_param(&self) -> i64 {
        i64::try_from(self.token).unwrap_or(i64::MAX)
    }

    /// Whether the lease is still live on the server now.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the server does not answer within the `io_timeout`.
    ///
    /// # Example
    /// ```no_run
    /// # async fn run(lock: alkstore_pg::PgLock) -> Result<(), alkstore_mem::LockError> {
    /// if !lock.is_held().await? {
    ///     return Ok(()); // lost: stop the work
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_held(&self) -> PgFuture<'_, bool> {
        BoxedFuture::new(self.is_held_inner())
    }

    async fn is_held_inner(&self) -> Result<bool, LockError> {
        let rows = self
            .store
            .call(Op::IsHeld, &[&self.name, &self.token_param()])
            .await?;
        Ok(field(&numbers(&rows)?, 0)? == 1)
    }

    /// Resets the deadline to the server's now + `ttl` and keeps the token.
    ///
    /// # Errors
    /// [`LockError::InvalidTtl`] for a zero `ttl` (no round trip); [`LockError::Expired`] at
    /// or after the deadline, or when the lease was released or force-released (it stays
    /// lost); [`LockError::Unavailable`] when the server does not answer within the
    /// `io_timeout` (the lease then lapses at its deadline unless a later renewal succeeds).
    ///
    /// # Example
    /// ```no_run
    /// # use std::time::Duration;
    /// # async fn run(mut lock: alkstore_pg::PgLock) -> Result<(), alkstore_mem::LockError> {
    /// lock.renew(Duration::from_secs(30)).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn renew(&mut self, ttl: Duration) -> PgFuture<'_, ()> {
        BoxedFuture::new(self.renew_inner(ttl))
    }

    async fn renew_inner(&self, ttl: Duration) -> Result<(), LockError> {
        if ttl.is_zero() {
            return Err(zero_ttl(ttl));
        }
        self.renew_within(ttl, None).await
    }

    /// A renewal to `ttl`, given up with [`LockError::Expired`] once `limit` has passed
    /// without an answer (the caller passes the time left until the estimated deadline).
    async fn renew_within(&self, ttl: Duration, limit: Option<Duration>) -> Result<(), LockError> {
        let sent = Instant::now();
        let ttl_us = micros(ttl);
        let token = self.token_param();
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] = [&self.name, &token, &ttl_us];
        let call = self.store.call(Op::Renew, &params);
        let rows = match limit {
            None => call.await?,
            Some(limit) => match tokio::time::timeout(limit, call).await {
                Ok(rows) => rows?,
                Err(_) => return Err(self.expired_at(self.anchor().estimate())),
            },
        };
        let reply = numbers(&rows)?;
        let now = field(&reply, 2)?;
        self.set_anchor(Anchor::new(now, sent));
        if field(&reply, 0)? != 1 {
            return Err(self.expired_at(from_us(now)));
        }
        self.deadline
            .store(from_us(field(&reply, 1)?).as_nanos(), Ordering::Release);
        self.ttl.store(nanos(ttl), Ordering::Release);
        Ok(())
    }

    /// `Expired` for this lease, seen at `now`.
    fn expired_at(&self, now: Timestamp) -> LockError {
        let lost = expired(&self.name, self.token, self.ttl(), self.deadline(), now);
        alkstore_mem::events::lease_lost(&self.name, self.token, &lost);
        lost
    }

    /// Releases the lease: `Ok(true)` when it was live and is now ended (free, or handed to
    /// the first waiter), `Ok(false)` when it had lapsed or was force-released. Compares the
    /// fencing token: never frees a newer lease. Dropping the future before it resolved
    /// still releases the lease (as dropping the lock does).
    ///
    /// While a transaction that called [`fence`](Self::fence) with this lease is still
    /// open, the release succeeds all the same (`Ok(true)`: the lease ends, and `renew`,
    /// `is_held` and `fence()` refuse its token from then on), but no grant slips in: nobody
    /// is granted the name until that transaction has committed or rolled back; the first
    /// waiter is handed it then (see the [crate docs](crate#fencing-in-your-own-transaction)).
    ///
    /// A release that hands the name to nobody does not wait for its WAL flush (see the
    /// [crate docs](crate#the-model)): if the server crashes right after, the lease may come
    /// back with it and lapse at its deadline.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the server does not answer within the `io_timeout`
    /// (the lease then lapses at its deadline).
    ///
    /// # Example
    /// ```no_run
    /// # async fn run(lock: alkstore_pg::PgLock) -> Result<(), alkstore_mem::LockError> {
    /// let was_live = lock.release().await?;
    /// # let _ = was_live;
    /// # Ok(())
    /// # }
    /// ```
    pub fn release(self) -> PgFuture<'static, bool> {
        BoxedFuture::new(self.release_inner())
    }

    async fn release_inner(mut self) -> Result<bool, LockError> {
        let released = release(&self.store, &self.name, self.token).await;
        self.release_on_drop = false;
        released
    }

    /// Gives up the handle without releasing: the lease stays until its deadline.
    ///
    /// # Example
    /// ```no_run
    /// # fn run(lock: alkstore_pg::PgLock) {
    /// lock.detach(); // the name stays busy until the deadline
    /// # }
    /// ```
    pub fn detach(mut self) {
        self.release_on_drop = false;
    }

    /// Renews the lease to its [`ttl`](Self::ttl) every `every` and resolves only when it is
    /// lost, with why: [`LockError::Expired`] once a renewal is refused (lapsed, released
    /// elsewhere, force-released) or cannot be answered before the deadline,
    /// [`LockError::Unavailable`] when the server answered with an error. Takes `&self`:
    /// race it against the work, which may use the lock meanwhile.
    ///
    /// `every` zero means a third of the ttl; anything above half the ttl is half the ttl
    /// (it renews at least every half ttl, so a typo cannot turn keep-alive off). A renewal
    /// may take up to the `io_timeout`, so a lease whose ttl is below twice the
    /// `io_timeout` is refused at once with [`LockError::InvalidTtl`]: with a ttl of at least
    /// that and renewals every half ttl or sooner, each renewal has its whole `io_timeout`
    /// before the deadline. It never runs past the deadline of the last renewal the server
    /// confirmed, by a local estimate of the server's clock that errs early.
    ///
    /// # Example
    /// ```no_run
    /// # use std::time::Duration;
    /// # async fn run(lock: alkstore_pg::PgLock) -> Result<(), alkstore_mem::LockError> {
    /// tokio::select! {
    ///     lost = lock.keep_alive(Duration::from_secs(3)) => return Err(lost),
    ///     () = async { /* the work, passing lock.token() to each write */ } => {}
    /// }
    /// lock.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn keep_alive(&self, every: Duration) -> PgKeepAlive<'_> {
        BoxedFuture::new(self.keep_alive_inner(every))
    }

    async fn keep_alive_inner(&self, every: Duration) -> LockError {
        let io = self.store.inner.config.io_timeout();
        // Wake-ups (a moved test clock) make it read the server's clock early. The anchor was
        // read before this registration, so the first turn reads the clock again instead of
        // sleeping a whole interval on the old reading.
        let wake = self.store.inner.wake.register(crate::acquire::new_id());
        wake.poke();
        loop {
            // The ttl may have changed since the last turn (a renew to another ttl).
            let ttl = self.ttl();
            if ttl < io.saturating_mul(2) {
                return too_short_to_keep_alive(ttl, io);
            }
            // Counted from the deadline: a keep-alive started late renews at once.
            let due = next_renewal(self.deadline(), ttl, every);
            let anchor = self.anchor();
            let left = anchor.until(self.deadline());
            if left.is_zero() {
                return self.expired_at(anchor.estimate());
            }
            tokio::select! {
                () = tokio::time::sleep(anchor.until(due).min(left)) => {}
                () = wake.notified() => {
                    // Woken early (a moved test clock, a force-release, a re-LISTEN): check
                    // the lease now, and renew only if due.
                    let sent = Instant::now();
                    match tokio::time::timeout(left, self.is_held_reply()).await {
                        Ok(Ok((held, _, now))) => {
                            let now = Anchor::new(now, sent);
                            if !held {
                                return self.expired_at(now.server);
                            }
                            self.set_anchor(now);
                            if now.server < due {
                                continue;
                            }
                        }
                        Ok(Err(err)) => return err,
                        Err(_) => return self.expired_at(self.anchor().estimate()),
                    }
                }
            }
            // Every renewal gets no more than the time left until the deadline.
            let anchor = self.anchor();
            let left = anchor.until(self.deadline());
            if left.is_zero() {
                return self.expired_at(anchor.estimate());
            }
            if let Err(err) = self.renew_within(self.ttl(), Some(left)).await {
                return err;
            }
        }
    }

    /// Resolves once the lease is no longer held, with why: [`LockError::Expired`] (lapsed,
    /// released elsewhere, force-released). It sleeps to the deadline and asks the server
    /// again, so renewals push it out. While the server cannot be reached it resolves at
    /// the deadline by the local estimate of the server's clock (which errs early, never
    /// late).
    ///
    /// # Example
    /// ```no_run
    /// # async fn run(lock: alkstore_pg::PgLock) {
    /// let why = lock.lapsed().await;
    /// eprintln!("lost the lease: {why}");
    /// # }
    /// ```
    pub fn lapsed(&self) -> PgLapsed<'_> {
        BoxedFuture::new(self.lapsed_inner())
    }

    async fn lapsed_inner(&self) -> LockError {
        let wake = self.store.inner.wake.register(crate::acquire::new_id());
        loop {
            let anchor = self.anchor();
            let left = anchor.until(self.deadline());
            if left.is_zero() {
                return self.expired_at(anchor.estimate());
            }
            let sent = Instant::now();
            let pause = match tokio::time::timeout(left, self.is_held_reply()).await {
                // The deadline came first.
                Err(_) => return self.expired_at(self.anchor().estimate()),
                Ok(Ok((held, deadline, now))) => {
                    let anchor = Anchor::new(now, sent);
                    if !held {
                        return self.expired_at(anchor.server);
                    }
                    self.set_anchor(anchor);
                    // A renewal elsewhere on this handle moved the deadline: follow it.
                    if deadline > self.deadline() {
                        self.deadline.store(deadline.as_nanos(), Ordering::Release);
                    }
                    anchor.until(self.deadline())
                }
                Ok(Err(_)) => left.min(Duration::from_millis(250)),
            };
            tokio::select! {
                () = tokio::time::sleep(pause + Duration::from_millis(1)) => {}
                () = wake.notified() => {}
            }
        }
    }

    /// `is_held` with the server's deadline and now.
    async fn is_held_reply(&self) -> Result<(bool, Timestamp, i64), LockError> {
        let rows = self
            .store
            .call(Op::IsHeld, &[&self.name, &self.token_param()])
            .await?;
        let reply = numbers(&rows)?;
        Ok((
            field(&reply, 0)? == 1,
            from_us(field(&reply, 1)?),
            field(&reply, 2)?,
        ))
    }

    /// Checks this lease inside your transaction, before a write the lock guards: runs the
    /// schema's `fence(name, token)` on `client` (a `tokio_postgres::Transaction`, or a
    /// `Client` inside `BEGIN`). It fails with SQLSTATE `55F01` (see
    /// [`is_fence_error`](crate::is_fence_error)) unless the lease is live on the server's
    /// clock now; after it succeeds, nobody can be granted the name until the transaction
    /// commits or rolls back, even past the deadline (a long transaction delays a
    /// takeover). Renewals and the release of this lease go on meanwhile, and so does the
    /// queue of waiters.
    ///
    /// Called inside a savepoint that is then rolled back (`ROLLBACK TO SAVEPOINT`, a
    /// nested transaction of an ORM, a plpgsql `EXCEPTION` block), the fence is released
    /// with it: PostgreSQL drops the row locks of an aborted subtransaction. Call it in the
    /// transaction itself, or again after the rollback to the savepoint.
    ///
    /// # Errors
    /// The `tokio_postgres::Error` of the call: the fence's own (`55F01`: the lease is not
    /// live with this token), or any other (the transaction is then aborted, as usual). In
    /// a `READ ONLY` transaction it always fails, with SQLSTATE `25006`
    /// (`read_only_sql_transaction`: row locks need a read-write transaction).
    ///
    /// # Example
    /// ```no_run
    /// # async fn run(lock: &alkstore_pg::PgLock, client: &mut tokio_postgres::Client)
    /// # -> Result<(), tokio_postgres::Error> {
    /// let tx = client.transaction().await?;
    /// lock.fence(&tx).await?; // refused unless the lease is live; holds it until commit
    /// tx.execute("UPDATE invoices SET paid = true WHERE id = 1001", &[]).await?;
    /// tx.commit().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn fence<C: GenericClient + Sync>(
        &self,
        client: &C,
    ) -> Result<(), tokio_postgres::Error> {
        client
            .execute(&self.store.fence_sql(), &[&self.name, &self.token_param()])
            .await
            .map(|_| ())
    }
}

/// Runs the release function for `token` on `name`.
pub(crate) async fn release(store: &PgLocks, name: &str, token: u64) -> Result<bool, LockError> {
    let token = i64::try_from(token).unwrap_or(i64::MAX);
    let rows = store.call(Op::Release, &[&name, &token]).await?;
    let released: i64 = rows
        .first()
        .and_then(|row| row.try_get(0).ok())
        .ok_or_else(|| crate::pool::unavailable("unexpected reply from a lock function"))?;
    Ok(released == 1)
}

impl fmt::Debug for PgLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgLock")
            .field("name", &self.name)
            .field("owner", &self.owner)
            .field("token", &self.token)
            .field("deadline", &self.deadline())
            .field("ttl", &self.ttl())
            .finish()
    }
}
