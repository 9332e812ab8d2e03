//! [`RedisLock`]: a held lease, and its renew, release and watch operations.

use core::fmt;
use std::time::{Duration, Instant};

use alkstore_mem::{LeaseInfo, LockError, Timestamp};

use crate::cleanup::Cleanup;
use crate::scripts::SCRIPTS;
use crate::store::{Anchor, RedisLocks, ToRedisArgsDyn, field, from_us, micros};

/// A lease held in Redis: the handle [`RedisLocks::try_lock`] and
/// [`RedisLocks::acquire`] hand out.
///
/// Dropping it releases the lease: in a task spawned on the current tokio runtime, or, when
/// there is no runtime or the runtime shuts down before that task ran (a lock dropped as
/// `#[tokio::main]` returns), on a helper thread with a connection of its own, which the
/// drop (or the runtime's shutdown) waits for, up to the `io_timeout`. If Redis cannot be
/// reached then, the lease lapses at its deadline. Calling [`release`](Self::release)
/// explicitly before exit is still the better way: it tells you whether the lease was live.
/// [`detach`](Self::detach) lets it run to its deadline on purpose.
#[must_use = "dropping a RedisLock releases it; call detach() to let the lease run to its deadline"]
pub struct RedisLock {
    store: RedisLocks,
    name: String,
    owner: String,
    token: u64,
    deadline: Timestamp,
    ttl: Duration,
    /// The last reply's reading of the server's clock.
    anchor: Anchor,
    release_on_drop: bool,
}

impl RedisLock {
    pub(crate) fn new(
        store: RedisLocks,
        name: &str,
        owner: &str,
        token: u64,
        deadline: Timestamp,
        ttl: Duration,
        anchor: Anchor,
    ) -> Self {
        RedisLock {
            store,
            name: name.into(),
            owner: owner.into(),
            token,
            deadline,
            ttl,
            anchor,
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

    /// The fencing token: larger than every token granted before it in this namespace, and
    /// kept by renewals. Pass it to whatever the lock protects, so that it can refuse a
    /// stale holder's writes.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// The deadline as of the last grant or renew, on the Redis server's clock (nanoseconds
    /// since the Unix epoch by the server's `TIME`): the lease is live while the server's
    /// time is before it.
    pub fn deadline(&self) -> Timestamp {
        self.deadline
    }

    /// The ttl of the last grant or renew: what [`keep_alive`](Self::keep_alive) renews to.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// This grant as a [`LeaseInfo`].
    pub fn info(&self) -> LeaseInfo {
        LeaseInfo::new(&self.name, &self.owner, self.token, self.deadline)
    }

    /// Whether the lease is still live on the server now.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when Redis does not answer within the `io_timeout`.
    pub async fn is_held(&self) -> Result<bool, LockError> {
        let reply: Vec<String> = self
            .store
            .run(&SCRIPTS.is_held, &self.name, &[&self.token])
            .await?;
        Ok(reply.first().map(String::as_str) == Some("1"))
    }

    /// Resets the deadline to the server's now + `ttl` and keeps the token.
    ///
    /// # Errors
    /// [`LockError::InvalidTtl`] for a zero `ttl` (no round trip); [`LockError::Expired`] at
    /// or after the deadline, or when the lease was lost (it stays lost);
    /// [`LockError::Unavailable`] when Redis does not answer within the `io_timeout` (the
    /// lease then lapses at its deadline unless a later renew succeeds).
    pub async fn renew(&mut self, ttl: Duration) -> Result<(), LockError> {
        if ttl.is_zero() {
            return Err(LockError::InvalidTtl { ttl });
        }
        self.renew_within(ttl, None).await
    }

    /// [`renew`](Self::renew), given up with [`LockError::Expired`] once `limit` has passed
    /// without an answer (the caller passes the time left until the estimated deadline).
    async fn renew_within(
        &mut self,
        ttl: Duration,
        limit: Option<Duration>,
    ) -> Result<(), LockError> {
        let sent = Instant::now();
        let ttl_us = micros(ttl);
        let args: [&dyn ToRedisArgsDyn; 2] = [&self.token, &ttl_us];
        let call = self
            .store
            .run::<Vec<String>>(&SCRIPTS.renew, &self.name, &args);
        let reply = match limit {
            None => call.await?,
            Some(limit) => match tokio::time::timeout(limit, call).await {
                Ok(reply) => reply?,
                Err(_) => return Err(self.expired()),
            },
        };
        let now = field(&reply, 2)?;
        self.anchor = Anchor::new(now, sent);
        if reply.first().map(String::as_str) != Some("1") {
            return Err(LockError::Expired {
                name: self.name.clone(),
                token: self.token,
                deadline: self.deadline,
                now: from_us(now),
            });
        }
        self.deadline = from_us(field(&reply, 1)?);
        self.ttl = ttl;
        Ok(())
    }

    /// `Expired` for this lease, at the estimated server time.
    fn expired(&self) -> LockError {
        LockError::Expired {
            name: self.name.clone(),
            token: self.token,
            deadline: self.deadline,
            now: self.anchor.estimate(),
        }
    }

    /// Releases the lease: `Ok(true)` when it was live and is now free (or handed to the
    /// first waiter), `Ok(false)` when it had lapsed. Compares the fencing token: never frees
    /// a newer lease.
    ///
    /// Dropping the future before it resolved still releases the lease (as dropping the
    /// lock does).
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when Redis does not answer within the `io_timeout` (the
    /// lease then lapses at its deadline).
    pub async fn release(mut self) -> Result<bool, LockError> {
        // Cancel-safe: if this future is dropped before the release ran (a task aborted
        // while its request still waited to be sent), `self` is dropped with
        // `release_on_drop` still set, and the drop releases instead.
        let released = release(&self.store, &self.name, self.token).await;
        self.release_on_drop = false;
        released
    }

    /// Gives up the handle without releasing: the lease stays until its deadline.
    pub fn detach(mut self) {
        self.release_on_drop = false;
    }

    /// Renews the lease to its [`ttl`](Self::ttl) every `every` (zero: a third of the ttl)
    /// and returns only when a renewal fails, with that error: [`LockError::Expired`] once
    /// the lease is lost, [`LockError::Unavailable`] when Redis answered with an error. Race
    /// it against the work (`tokio::select!`), so that the work stops when the lease is gone.
    ///
    /// It returns no later than the deadline of the last renewal Redis confirmed, by the
    /// local estimate of the server's clock (the instant each request was sent plus the time
    /// the server said was left, which errs early, never late): a renewal that gets no
    /// answer before then ends it with [`LockError::Expired`], even though the `io_timeout`
    /// has not run out. Keep the `io_timeout` well below `ttl - every`, so that one slow
    /// answer does not cost the lease: a renewal sent at `every` has `ttl - every` left.
    pub async fn keep_alive(&mut self, every: Duration) -> LockError {
        let every = if every.is_zero() {
            (self.ttl / 3).max(Duration::from_micros(1))
        } else {
            every
        };
        let mut due = self.anchor.estimate().saturating_add(every);
        // Wake-ups (a moved test clock) make it read the server's clock early. The anchor was
        // read before this registration: a wake-up published in between reached nobody, so
        // the first turn reads the server's clock again instead of sleeping a whole `every`
        // on the old reading. (Without a subscription it renews on its own timer.)
        let wake = self.sleeper();
        wake.poke();
        loop {
            let left = self.anchor.until(self.deadline);
            if left.is_zero() {
                return self.expired();
            }
            tokio::select! {
                () = tokio::time::sleep(self.anchor.until(due).min(left)) => {}
                () = wake.notified() => {
                    // Woken early (a moved test clock, or a reconnect): renew only if due.
                    match tokio::time::timeout(left, self.store.server_now()).await {
                        Ok(Ok(now)) if now.server < due => {
                            self.anchor = now;
                            continue;
                        }
                        Ok(Ok(now)) => self.anchor = now,
                        Ok(Err(err)) => return err,
                        Err(_) => return self.expired(),
                    }
                }
            }
            // Every renewal gets no more than the time left until the deadline.
            let left = self.anchor.until(self.deadline);
            if left.is_zero() {
                return self.expired();
            }
            if let Err(err) = self.renew_within(self.ttl, Some(left)).await {
                return err;
            }
            due = self.anchor.server.saturating_add(every);
        }
    }

    /// Resolves once the lease is no longer held (lapsed, released elsewhere, or lost). It
    /// sleeps to the deadline and asks the server again, so renewals push it out. While
    /// Redis cannot be reached it resolves at the deadline by the local estimate of the
    /// server's clock (which errs early, never late): no call to Redis may delay it past
    /// that.
    pub async fn lapsed(&self) {
        let mut anchor = self.anchor;
        let mut deadline = self.deadline;
        let wake = self.sleeper();
        loop {
            let left = anchor.until(deadline);
            if left.is_zero() {
                return;
            }
            let sent = Instant::now();
            let call = async {
                self.store
                    .run::<Vec<String>>(&SCRIPTS.is_held, &self.name, &[&self.token])
                    .await
            };
            let pause = match tokio::time::timeout(left, call).await {
                // The deadline came first.
                Err(_) => return,
                Ok(Ok(reply)) => {
                    let (Ok(dl), Ok(now)) = (field(&reply, 1), field(&reply, 2)) else {
                        return;
                    };
                    if reply.first().map(String::as_str) != Some("1") {
                        return;
                    }
                    anchor = Anchor::new(now, sent);
                    deadline = from_us(dl);
                    anchor.until(deadline)
                }
                Ok(Err(_)) => left.min(Duration::from_millis(250)),
            };
            let pause = pause + Duration::from_millis(1);
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = wake.notified() => {}
            }
        }
    }

    /// A registration for broadcast wake-ups (a moved test clock), so that sleeps follow it.
    fn sleeper(&self) -> crate::wake::Registration {
        self.store.inner.wake.register(crate::acquire::new_id())
    }
}

/// Runs the release script for `token` on `name` (with a request id, so that a retry after a
/// lost reply answers as the first run did).
pub(crate) async fn release(store: &RedisLocks, name: &str, token: u64) -> Result<bool, LockError> {
    let rid = crate::acquire::new_id();
    let mark = store.inner.config.release_mark_ms();
    let reply: String = store
        .run(&SCRIPTS.release, name, &[&token, &rid, &mark])
        .await?;
    Ok(reply == "1")
}

impl Drop for RedisLock {
    fn drop(&mut self) {
        // In a task on the current runtime, or on a helper thread when there is none or it
        // shuts down first (see `Cleanup`).
        if self.release_on_drop {
            Cleanup::release(&self.store, &self.name, self.token).launch();
        }
    }
}

impl fmt::Debug for RedisLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisLock")
            .field("name", &self.name)
            .field("owner", &self.owner)
            .field("token", &self.token)
            .field("deadline", &self.deadline)
            .field("ttl", &self.ttl)
            .finish()
    }
}
