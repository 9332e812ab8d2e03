//! [`Lock`]: a held lease, and its renew and release operations (keep-alive and lapsed are in
//! `watch.rs`).

use core::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use alkstore_mem::{BoxedFuture, LeaseInfo, LockError, Timestamp};

use crate::anchor::Anchor;
use crate::cleanup::Cleanup;
use crate::errors::{expired, zero_ttl};
use crate::protocol::{Grant, Protocol};
use crate::store::{Locks, RemoteFuture};

/// A lease held by engine `P`: the handle [`Locks::try_lock`] and [`Locks::acquire`] hand out
/// (what `RedisLock`, `PgLock` and `SqliteLock` are).
///
/// Its deadline and ttl follow every renewal, whichever path made it
/// ([`renew`](Self::renew) or [`keep_alive`](Self::keep_alive), which takes `&self`, so the
/// work it guards can read the handle meanwhile).
///
/// Dropping it releases the lease: in a task spawned on the current tokio runtime, or, when
/// there is no runtime or the runtime shuts down before that task ran (a lock dropped as
/// `#[tokio::main]` returns), on a helper thread with a connection of its own, which the drop
/// (or the runtime's shutdown) waits for, up to the `io_timeout`. If the engine cannot be
/// reached then, the lease lapses at its deadline. [`release`](Self::release) explicitly is
/// still better: it says whether the lease was live. [`detach`](Self::detach) lets it run to
/// its deadline on purpose.
#[must_use = "dropping a lock releases it; call detach() to let the lease run to its deadline"]
pub struct Lock<P: Protocol> {
    pub(crate) store: Locks<P>,
    name: String,
    owner: String,
    token: u64,
    /// What renewals change, behind a lock of its own so that `keep_alive` renews through
    /// `&self` while the work it guards reads the handle.
    live: Mutex<Live>,
    release_on_drop: bool,
}

/// The lease as of the last grant or renewal, and the last reading of the engine's clock.
///
/// Which of two replies is the newer: one whose request was sent after the other's reply
/// arrived ran later on the engine, whatever its clock says (it may have stepped back: an NTP
/// step, a failover to a replica behind); of two calls in flight together (renewals racing on
/// one handle, which is `Sync`), the one the engine's clock reads later.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Live {
    pub(crate) deadline: Timestamp,
    pub(crate) ttl: Duration,
    /// The engine's time of the grant or renewal that set `deadline` and `ttl`.
    renewed_at: Timestamp,
    /// When the reply of that grant or renewal arrived, on the local clock.
    renewed_seen: Instant,
    pub(crate) anchor: Anchor,
    /// When the reply that gave `anchor` arrived, on the local clock.
    seen: Instant,
}

impl Live {
    /// Whether a reply read `server` on the engine's clock, to a request sent at `sent`, is
    /// newer than the one read at `then` that arrived at `then_seen`.
    fn newer(sent: Instant, server: Timestamp, then_seen: Instant, then: Timestamp) -> bool {
        sent >= then_seen || server >= then
    }

    /// Takes a newer reading of the engine's clock; an older one (a reply that overtook it)
    /// changes nothing.
    pub(crate) fn observe(&mut self, anchor: Anchor) {
        if Self::newer(anchor.local, anchor.server, self.seen, self.anchor.server) {
            self.anchor = anchor;
            self.seen = Instant::now();
        }
    }

    /// Takes the deadline and ttl of a renewal answered with `anchor`, unless a newer grant
    /// or renewal set them.
    fn renewed(&mut self, anchor: Anchor, deadline: Timestamp, ttl: Duration) {
        if Self::newer(
            anchor.local,
            anchor.server,
            self.renewed_seen,
            self.renewed_at,
        ) {
            self.deadline = deadline;
            self.ttl = ttl;
            self.renewed_at = anchor.server;
            self.renewed_seen = Instant::now();
        }
    }
}

impl<P: Protocol> Lock<P> {
    pub(crate) fn new(
        store: Locks<P>,
        name: String,
        owner: String,
        grant: Grant,
        ttl: Duration,
        anchor: Anchor,
    ) -> Self {
        Lock {
            store,
            name,
            owner,
            token: grant.token,
            live: Mutex::new(Live {
                deadline: grant.deadline,
                ttl,
                renewed_at: anchor.server,
                renewed_seen: Instant::now(),
                anchor,
                seen: Instant::now(),
            }),
            release_on_drop: true,
        }
    }

    /// The lease as of the last grant or renewal.
    pub(crate) fn live(&self) -> MutexGuard<'_, Live> {
        // Never held across an await or user code: a poisoned lock still holds good data.
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The last reading of the engine's clock.
    pub(crate) fn anchor(&self) -> Anchor {
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

    /// The fencing token: larger than every token granted before it, and kept by renewals.
    /// Pass it to whatever the lock protects, so that it can refuse a stale holder's writes.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// The deadline as of the last grant or renewal, on the engine's clock (nanoseconds since
    /// the Unix epoch by the server's or the file's clock): the lease is live while the
    /// engine's time is before it.
    pub fn deadline(&self) -> Timestamp {
        self.live().deadline
    }

    /// The ttl of the last grant or renewal: what [`keep_alive`](Self::keep_alive) renews to.
    pub fn ttl(&self) -> Duration {
        self.live().ttl
    }

    /// This grant as a [`LeaseInfo`], with the deadline as of the last grant or renewal.
    pub fn info(&self) -> LeaseInfo {
        LeaseInfo::new(&self.name, &self.owner, self.token, self.deadline())
    }

    /// Whether the lease is still live on the engine now.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the engine does not answer within the `io_timeout`.
    pub fn is_held(&self) -> RemoteFuture<'_, bool> {
        BoxedFuture::new(async move { Ok(self.check().await?.is_ok()) })
    }

    /// Asks the engine whether the lease is live: `Ok(deadline)` if it is (the anchor
    /// follows the reply), else `Err(Expired)` at the engine's time.
    pub(crate) async fn check(&self) -> Result<Result<Timestamp, LockError>, LockError> {
        let sent = Instant::now();
        let (store, name, token) = (self.store.clone(), self.name.clone(), self.token);
        let reply = self
            .store
            .call(&self.name, async move {
                store.shared.engine.is_held(&name, token).await
            })
            .await?;
        let anchor = Anchor::new(reply.now, sent);
        let mut live = self.live();
        live.observe(anchor);
        if reply.value.live {
            // A renewal elsewhere on this handle may have moved the deadline: follow it.
            if reply.value.deadline > live.deadline {
                live.deadline = reply.value.deadline;
            }
            Ok(Ok(reply.value.deadline))
        } else {
            drop(live);
            Ok(Err(self.expired_at(anchor.server)))
        }
    }

    /// Resets the deadline to the engine's now + `ttl` and keeps the token.
    ///
    /// # Errors
    /// [`LockError::InvalidTtl`] for a zero `ttl` (no round trip); [`LockError::Expired`] at
    /// or after the deadline, or when the lease was lost (it stays lost);
    /// [`LockError::Unavailable`] when the engine does not answer within the `io_timeout`.
    /// The lease then lapses at the deadline this handle knows unless a later renewal
    /// succeeds, **or** the refused renewal is applied after all: its request may be in
    /// flight (a frozen server runs it when it thaws), and the kit lets it run on in the
    /// background rather than cut the connection. The handle keeps the deadline and ttl it
    /// knew, which are never later than the lease's real ones: [`deadline`](Self::deadline),
    /// [`keep_alive`](Self::keep_alive) and [`lapsed`](Self::lapsed) then err early, never
    /// late, the lease is still this handle's (same token), and [`release`](Self::release)
    /// or a drop ends it whichever deadline it has. Renew again (or call
    /// [`is_held`](Self::is_held)) to learn the real deadline.
    pub fn renew(&mut self, ttl: Duration) -> RemoteFuture<'_, ()> {
        BoxedFuture::new(async move {
            if ttl.is_zero() {
                return Err(zero_ttl(ttl));
            }
            self.renew_within(ttl, None).await
        })
    }

    /// [`renew`](Self::renew), given up with [`LockError::Expired`] once `limit` has passed
    /// without an answer (the caller passes the time left until the estimated deadline).
    pub(crate) async fn renew_within(
        &self,
        ttl: Duration,
        limit: Option<Duration>,
    ) -> Result<(), LockError> {
        let sent = Instant::now();
        let (store, name, token) = (self.store.clone(), self.name.clone(), self.token);
        let call = self.store.call(&self.name, async move {
            store.shared.engine.renew(&name, token, ttl).await
        });
        let reply = match limit {
            None => call.await?,
            Some(limit) => match tokio::time::timeout(limit, call).await {
                Ok(reply) => reply?,
                Err(_) => return Err(self.expired()),
            },
        };
        let anchor = Anchor::new(reply.now, sent);
        let Some(deadline) = reply.value else {
            self.live().observe(anchor);
            return Err(self.expired_at(anchor.server));
        };
        let mut live = self.live();
        live.renewed(anchor, deadline, ttl);
        live.observe(anchor);
        Ok(())
    }

    /// `Expired` for this lease, found gone at `now` on the engine's clock.
    pub(crate) fn expired_at(&self, now: Timestamp) -> LockError {
        let Live { deadline, ttl, .. } = *self.live();
        let lost = expired(&self.name, self.token, ttl, deadline, now);
        alkstore_mem::events::lease_lost(&self.name, self.token, &lost);
        lost
    }

    /// `Expired` for this lease, at the estimated engine time.
    pub(crate) fn expired(&self) -> LockError {
        self.expired_at(self.anchor().estimate())
    }

    /// Releases the lease: `Ok(true)` when it was live and is now ended (free, or handed to
    /// the first waiter), `Ok(false)` when it had lapsed or was force-released. Compares the
    /// fencing token: never frees a newer lease.
    ///
    /// Dropping the future before it resolved still releases the lease (the call runs on in a
    /// task of its own, or the dropped lock releases it).
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the engine does not answer within the `io_timeout`,
    /// or the runtime shuts down during the call: the handle's drop then releases it in the
    /// background, retried, as any dropped lock's does (the refused call also runs on; a
    /// second release of a released lease changes nothing; failing every attempt, the lease
    /// lapses at its deadline).
    pub fn release(self) -> RemoteFuture<'static, bool> {
        BoxedFuture::new(async move {
            let mut lock = self;
            let (store, name, token) = (lock.store.clone(), lock.name.clone(), lock.token);
            let released = lock
                .store
                .call(&lock.name, async move {
                    let rid = crate::new_id();
                    store.shared.engine.release(&name, token, &rid).await
                })
                .await;
            // Answered: done. (Dropped before this point, the lock's drop releases instead; and
            // a call that failed, perhaps cut short by its runtime shutting down, is tried
            // again by the drop, in the background or by the fallback: a second release of a
            // released lease changes nothing.)
            lock.release_on_drop = released.is_err();
            released
        })
    }

    /// Gives up the handle without releasing: the lease stays until its deadline.
    pub fn detach(mut self) {
        self.release_on_drop = false;
    }
}

impl<P: Protocol> Drop for Lock<P> {
    fn drop(&mut self) {
        // In a task on the current runtime, or on a helper thread when there is none or it
        // shuts down first (see `Cleanup`).
        if self.release_on_drop {
            Cleanup::release(&self.store, &self.name, self.token).launch();
        }
    }
}

impl<P: Protocol> fmt::Debug for Lock<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock")
            .field("engine", &P::NAME)
            .field("name", &self.name)
            .field("owner", &self.owner)
            .field("token", &self.token)
            .field("deadline", &self.deadline())
            .field("ttl", &self.ttl())
            .finish()
    }
}
