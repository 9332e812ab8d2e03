//! [`RedisLock`]: a held lease, and its renew, release and watch operations.

use core::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use alkstore_mem::contract::next_renewal;
use alkstore_mem::{BoxedFuture, LeaseInfo, LockError, Timestamp, TtlProblem};

use crate::cleanup::Cleanup;
use crate::scripts::SCRIPTS;
use crate::store::{Anchor, RedisFuture, RedisLocks, ToRedisArgsDyn, field, from_us, micros};

/// The future of [`RedisLock::keep_alive`]: resolves to the error that ended the renewals.
pub type RedisKeepAlive<'a> = BoxedFuture<'a, LockError>;

/// The future of [`RedisLock::lapsed`]: resolves to how the lease ended.
pub type RedisLapsed<'a> = BoxedFuture<'a, LockError>;

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
    /// What renewals change, behind a lock of its own so that `keep_alive` renews through
    /// `&self` while the work it guards reads the handle.
    live: Mutex<Live>,
    release_on_drop: bool,
}

/// The lease as of the last grant or renew, and the last reading of the server's clock.
#[derive(Clone, Copy, Debug)]
struct Live {
    deadline: Timestamp,
    ttl: Duration,
    /// The server's time of the grant or renewal that set `deadline` and `ttl`: renewals
    /// racing on one handle (it is `Sync`) are applied in the server's order, never an older
    /// one over a newer.
    renewed_at: Timestamp,
    anchor: Anchor,
}

impl Live {
    /// Takes a newer reading of the server's clock; an older one (a reply that overtook it)
    /// changes nothing.
    fn observe(&mut self, anchor: Anchor) {
        if anchor.server >= self.anchor.server {
            self.anchor = anchor;
        }
    }
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
            live: Mutex::new(Live {
                deadline,
                ttl,
                renewed_at: anchor.server,
                anchor,
            }),
            release_on_drop: true,
        }
    }

    /// The lease as of the last grant or renew.
    fn live(&self) -> MutexGuard<'_, Live> {
        // Never held across an await or user code: a poisoned lock still holds good data.
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The last reading of the server's clock.
    fn anchor(&self) -> Anchor {
        self.live().anchor
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
        self.live().deadline
    }

    /// The ttl of the last grant or renew: what [`keep_alive`](Self::keep_alive) renews to.
    pub fn ttl(&self) -> Duration {
        self.live().ttl
    }

    /// This grant as a [`LeaseInfo`], with the deadline as of the last grant or renew.
    pub fn info(&self) -> LeaseInfo {
        LeaseInfo::new(&self.name, &self.owner, self.token, self.deadline())
    }

    /// Whether the lease is still live on the server now.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when Redis does not answer within the `io_timeout`.
    pub fn is_held(&self) -> RedisFuture<'_, bool> {
        BoxedFuture::new(async move { Ok(self.check().await?.is_ok()) })
    }

    /// Asks the server whether the lease is live: `Ok(deadline)` if it is (the anchor
    /// follows the reply), else `Err(Expired)` at the server's time.
    async fn check(&self) -> Result<Result<Timestamp, LockError>, LockError> {
        let sent = Instant::now();
        let reply: Vec<String> = self
            .store
            .run(&SCRIPTS.is_held, &self.name, &[&self.token])
            .await?;
        let anchor = Anchor::new(field(&reply, 2)?, sent);
        self.live().observe(anchor);
        if reply.first().map(String::as_str) == Some("1") {
            Ok(Ok(from_us(field(&reply, 1)?)))
        } else {
            Ok(Err(self.expired_at(anchor.server)))
        }
    }

    /// Resets the deadline to the server's now + `ttl` and keeps the token.
    ///
    /// # Errors
    /// [`LockError::InvalidTtl`] for a zero `ttl` (no round trip); [`LockError::Expired`] at
    /// or after the deadline, or when the lease was lost (it stays lost);
    /// [`LockError::Unavailable`] when Redis does not answer within the `io_timeout` (the
    /// lease then lapses at its deadline unless a later renew succeeds).
    pub fn renew(&mut self, ttl: Duration) -> RedisFuture<'_, ()> {
        BoxedFuture::new(async move {
            if ttl.is_zero() {
                return Err(LockError::InvalidTtl {
                    ttl,
                    problem: TtlProblem::Zero,
                });
            }
            self.renew_within(ttl, None).await
        })
    }

    /// [`renew`](Self::renew), given up with [`LockError::Expired`] once `limit` has passed
    /// without an answer (the caller passes the time left until the estimated deadline).
    async fn renew_within(&self, ttl: Duration, limit: Option<Duration>) -> Result<(), LockError> {
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
        let anchor = Anchor::new(field(&reply, 2)?, sent);
        if reply.first().map(String::as_str) != Some("1") {
            self.live().observe(anchor);
            return Err(self.expired_at(anchor.server));
        }
        let deadline = from_us(field(&reply, 1)?);
        let mut live = self.live();
        live.observe(anchor);
        if anchor.server >= live.renewed_at {
            live.deadline = deadline;
            live.ttl = ttl;
            live.renewed_at = anchor.server;
        }
        Ok(())
    }

    /// `Expired` for this lease, found gone at `now` on the server's clock.
    fn expired_at(&self, now: Timestamp) -> LockError {
        let Live { deadline, ttl, .. } = *self.live();
        let lost = LockError::Expired {
            name: self.name.clone(),
            token: self.token,
            ttl,
            deadline,
            now,
        };
        alkstore_mem::events::lease_lost(&self.name, self.token, &lost);
        lost
    }

    /// `Expired` for this lease, at the estimated server time.
    fn expired(&self) -> LockError {
        self.expired_at(self.anchor().estimate())
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
    pub fn release(self) -> RedisFuture<'static, bool> {
        BoxedFuture::new(async move {
            // Cancel-safe: if this future is dropped before the release ran (a task aborted
            // while its request still waited to be sent), the lock is dropped with
            // `release_on_drop` still set, and the drop releases instead.
            let mut lock = self;
            let released = release(&lock.store, &lock.name, lock.token).await;
            lock.release_on_drop = false;
            drop(lock);
            released
        })
    }

    /// Gives up the handle without releasing: the lease stays until its deadline.
    pub fn detach(mut self) {
        self.release_on_drop = false;
    }

    /// Renews the lease to its [`ttl`](Self::ttl) every `every`, and returns only when a
    /// renewal fails, with that error: [`LockError::Expired`] once the lease is lost,
    /// [`LockError::Unavailable`] when Redis answered with an error. Race it against the work
    /// (`tokio::select!`), so that the work stops when the lease is gone; it takes `&self`,
    /// so the work can read the handle meanwhile.
    ///
    /// The interval is [`keep_alive_interval`](alkstore_mem::contract::keep_alive_interval): zero means a third of the ttl, anything
    /// above half the ttl is clamped to half. A renewal may take up to the `io_timeout`:
    /// a ttl below twice the `io_timeout` is refused at once with [`LockError::InvalidTtl`]
    /// ([`TtlProblem::TooShortToKeepAlive`]), since one slow answer could cost that lease.
    ///
    /// It returns no later than the deadline of the last renewal Redis confirmed, by the
    /// local estimate of the server's clock (the instant each request was sent plus the time
    /// the server said was left, which errs early, never late): a renewal that gets no
    /// answer before then ends it with [`LockError::Expired`]. A
    /// [`force_release`](RedisLocks::force_release) wakes it to check at once.
    pub fn keep_alive(&self, every: Duration) -> RedisKeepAlive<'_> {
        BoxedFuture::new(self.keep_alive_inner(every))
    }

    async fn keep_alive_inner(&self, every: Duration) -> LockError {
        let io_timeout = self.store.inner.config.io_timeout();
        // Wake-ups (a moved test clock, a force-release) make it ask the server early. The
        // anchor was read before this registration: a wake-up published in between reached
        // nobody, so the first turn asks the server again instead of sleeping a whole
        // interval on the old reading. (Without a subscription it renews on its own timer.)
        let wake = self.sleeper();
        wake.poke();
        loop {
            let Live {
                deadline,
                ttl,
                anchor,
                ..
            } = *self.live();
            if ttl < io_timeout.saturating_mul(2) {
                return LockError::InvalidTtl {
                    ttl,
                    problem: TtlProblem::TooShortToKeepAlive { io_timeout },
                };
            }
            // Counted from the deadline: a keep-alive started late renews at once.
            let next = next_renewal(deadline, ttl, every);
            let left = anchor.until(deadline);
            if left.is_zero() {
                return self.expired();
            }
            tokio::select! {
                () = tokio::time::sleep(anchor.until(next).min(left)) => {}
                () = wake.notified() => {
                    // Woken early (a moved test clock, a force-release, a reconnect): make
                    // sure the lease is still held, and renew only if due.
                    match tokio::time::timeout(left, self.check()).await {
                        Ok(Ok(Ok(_))) if self.anchor().server < next => continue,
                        Ok(Ok(Ok(_))) => {}
                        Ok(Ok(Err(gone))) => return gone,
                        Ok(Err(err)) => return err,
                        Err(_) => return self.expired(),
                    }
                }
            }
            // Every renewal gets no more than the time left until the deadline.
            let left = self.anchor().until(self.deadline());
            if left.is_zero() {
                return self.expired();
            }
            if let Err(err) = self.renew_within(self.ttl(), Some(left)).await {
                return err;
            }
        }
    }

    /// Resolves once the lease is no longer held (lapsed, released elsewhere,
    /// force-released), with how it ended ([`LockError::Expired`]). It sleeps to the deadline
    /// and asks the server again, so renewals push it out. While Redis cannot be reached it
    /// resolves at the deadline by the local estimate of the server's clock (which errs
    /// early, never late): no call to Redis may delay it past that.
    pub fn lapsed(&self) -> RedisLapsed<'_> {
        BoxedFuture::new(self.lapsed_inner())
    }

    async fn lapsed_inner(&self) -> LockError {
        let wake = self.sleeper();
        loop {
            let left = self.anchor().until(self.deadline());
            if left.is_zero() {
                return self.expired();
            }
            let pause = match tokio::time::timeout(left, self.check()).await {
                // The deadline came first.
                Err(_) => return self.expired(),
                Ok(Ok(Err(gone))) => return gone,
                Ok(Ok(Ok(deadline))) => self.anchor().until(deadline),
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
            .field("deadline", &self.deadline())
            .field("ttl", &self.ttl())
            .finish()
    }
}
