//! [`Lock`]: the handle of one grant, and what it does through its shard.

use alloc::sync::Arc;
use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering};
use core::task::Waker;
use core::time::Duration;

use super::Shard;
use crate::error::LockError;
use crate::lease::LeaseInfo;
use crate::time::{Clock, Timestamp};
use crate::timer::Timer;
use crate::trace;

/// A held lease on one lock name: renew it, release it, or let it go.
///
/// Dropping a `Lock` releases it (as [`release`](Self::release) does, handing it to the
/// first waiting [`acquire`](crate::LockRegistry::acquire) if any); [`detach`](Self::detach)
/// gives up the handle and lets the lease run to its deadline instead. A `Lock` is `Send`
/// and `Sync` when its clock is `Send + Sync`, and is not `Clone`: one grant, one handle.
/// Its deadline and ttl are kept in atomics, so that [`keep_alive`](Self::keep_alive) can
/// renew through `&self` while the work it guards reads the handle.
///
/// # Example
/// ```
/// use alkstore_mem::{LockError, LockRegistry, ManualClock};
/// use core::time::Duration;
///
/// let clock = ManualClock::new();
/// let registry = LockRegistry::new(clock.clone());
/// let mut lock = registry.try_lock("sync", "a", Duration::from_secs(10))?.unwrap();
///
/// clock.advance(Duration::from_secs(8));
/// lock.renew(Duration::from_secs(10))?; // now + 10 s
/// clock.advance(Duration::from_secs(9));
/// assert!(lock.is_held());
///
/// clock.advance(Duration::from_secs(1));
/// assert!(matches!(lock.renew(Duration::from_secs(10)), Err(LockError::Expired { .. })));
/// assert!(!lock.release(), "it had lapsed: false, not an error");
/// # Ok::<(), LockError>(())
/// ```
#[must_use = "dropping a Lock releases it at once; call detach() to let the lease run to its deadline"]
pub struct Lock<C> {
    shard: Arc<Shard<C>>,
    /// The grant: name, owner, token (its `deadline` is the grant's; `deadline` below follows
    /// renewals).
    lease: LeaseInfo,
    /// The deadline as of the last grant or renew, in nanoseconds.
    deadline: AtomicU64,
    /// The ttl of the last grant or renew, in nanoseconds (saturated: see [`ttl_nanos`]).
    ttl: AtomicU64,
    /// Whether dropping the handle releases the lease.
    release_on_drop: bool,
}

/// A ttl as the handle keeps it: whole nanoseconds, saturating at `u64::MAX` (584 years),
/// which reads back as `Duration::MAX`.
fn ttl_nanos(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_nanos()).unwrap_or(u64::MAX)
}

impl<C: Clock> Lock<C> {
    pub(crate) fn new(shard: Arc<Shard<C>>, lease: LeaseInfo, ttl: Duration) -> Self {
        Lock {
            shard,
            deadline: AtomicU64::new(lease.deadline().as_nanos()),
            ttl: AtomicU64::new(ttl_nanos(ttl)),
            lease,
            release_on_drop: true,
        }
    }
}

impl<C> Lock<C> {
    /// The lock's name.
    pub fn name(&self) -> &str {
        self.lease.name()
    }

    /// The owner the lease was granted to.
    pub fn owner(&self) -> &str {
        self.lease.owner()
    }

    /// The fencing token: strictly larger than every token granted before it by this
    /// registry, and kept by [`renew`](Self::renew). Pass it to whatever the lock protects so
    /// that a stale holder's late writes can be told apart and refused.
    #[inline]
    pub fn token(&self) -> u64 {
        self.lease.token()
    }

    /// The deadline as of the last grant or renew (a renewal by
    /// [`keep_alive`](Self::keep_alive) included): the lease is live while `now < deadline`.
    #[inline]
    pub fn deadline(&self) -> Timestamp {
        Timestamp::from_nanos(self.deadline.load(Ordering::Acquire))
    }

    /// This grant as a [`LeaseInfo`]: name, owner, token, and the deadline as of the last
    /// grant or renew.
    pub fn info(&self) -> LeaseInfo {
        let mut info = self.lease.clone();
        info.deadline = self.deadline();
        info
    }

    /// The ttl of the last grant or [`renew`](Self::renew): what
    /// [`keep_alive`](Self::keep_alive) renews to. (Kept in whole nanoseconds; a ttl beyond
    /// 584 years reads back as `Duration::MAX`.)
    #[inline]
    pub fn ttl(&self) -> Duration {
        match self.ttl.load(Ordering::Acquire) {
            u64::MAX => Duration::MAX,
            nanos => Duration::from_nanos(nanos),
        }
    }
}

impl<C: Clock> Lock<C> {
    /// How long the lease has left now: zero once it lapsed or was released. (In-memory
    /// only: a remote engine would answer with a round trip's worth of error.)
    pub fn remaining(&self) -> Duration {
        self.shard.with_state(|state, now, _| {
            let live = state.table.live_deadline_of(&self.lease, now);
            live.map_or(Duration::ZERO, |deadline| {
                if deadline == Timestamp::MAX {
                    // Never lapses.
                    return Duration::MAX;
                }
                deadline.saturating_duration_since(state.table.latest_now())
            })
        })
    }

    /// Whether the lease is still live now. Allocates nothing.
    #[inline]
    pub fn is_held(&self) -> bool {
        self.shard
            .with_state(|state, now, _| state.table.is_held(&self.lease, now))
    }

    /// Resets the deadline to `now + ttl` (an absolute reset: a shorter `ttl` moves it
    /// earlier) and keeps the token. Allocates nothing when it succeeds.
    ///
    /// # Errors
    /// [`LockError::InvalidTtl`] when `ttl` is zero; [`LockError::Expired`] when the lease
    /// lapsed (at or after its deadline), whether or not anyone took the name since. A
    /// refused renew changes nothing and does not revive the lease.
    #[inline]
    pub fn renew(&mut self, ttl: Duration) -> Result<(), LockError> {
        self.renew_shared(ttl)
    }

    /// [`renew`](Self::renew) through a shared reference: what `keep_alive` renews with.
    #[inline]
    pub(crate) fn renew_shared(&self, ttl: Duration) -> Result<(), LockError> {
        let renewed = self.shard.with_state(|state, now, later| {
            let deadline = state.renew(&self.lease, self.deadline(), ttl, now, later)?;
            // Stored under the shard's lock, so that renewals racing on one handle (it is
            // `Sync`) leave it in the table's order: never an older deadline over a newer.
            self.deadline.store(deadline.as_nanos(), Ordering::Release);
            self.ttl.store(ttl_nanos(ttl), Ordering::Release);
            Ok(())
        });
        match renewed {
            Ok(()) => Ok(()),
            Err(LockError::Expired {
                name,
                token,
                deadline,
                now,
                ..
            }) => {
                let lost = LockError::Expired {
                    name,
                    token,
                    ttl: self.ttl(),
                    deadline,
                    now,
                };
                trace::renew_refused(&self.lease, &lost);
                Err(lost)
            }
            Err(refused) => {
                trace::renew_refused(&self.lease, &refused);
                Err(refused)
            }
        }
    }

    /// The error for this lease found gone at `now`, on the registry's clock.
    pub(crate) fn expired_at(&self, now: Timestamp) -> LockError {
        LockError::Expired {
            name: self.lease.name().into(),
            token: self.lease.token(),
            ttl: self.ttl(),
            deadline: self.deadline(),
            now,
        }
    }

    /// Reports (with the `tracing` feature) this grant, made `how`. Called once the handle
    /// exists, so that a subscriber that panics unwinds through its drop, which passes the
    /// lease on instead of stranding it.
    pub(crate) fn traced_grant(&self, how: trace::How) {
        trace::granted(&self.lease, how);
    }

    /// Reports (with the `tracing` feature) that a watcher found this lease gone.
    pub(crate) fn saw_lapse(&self, how: &LockError) {
        trace::lapse_seen(&self.lease, how);
    }

    /// Releases the lease. Returns `true` when it was live and is now free, `false` when it
    /// had already lapsed (never an error). Never touches a newer lease of the same name.
    #[inline]
    pub fn release(mut self) -> bool {
        self.release_on_drop = false;
        self.release_now()
    }

    /// Gives up the handle without releasing: the lease stays until its deadline.
    pub fn detach(mut self) {
        self.release_on_drop = false;
    }

    #[inline]
    fn release_now(&self) -> bool {
        self.shard
            .with_state(|state, now, later| state.release(&self.lease, now, later))
    }
}

impl<C: Timer> Lock<C> {
    /// [`lapsed`](Self::lapsed)'s check: the lease's deadline if it is live, with `waker`
    /// kept (as watcher `id`) to be woken should it end early (force-released); else the
    /// reading it was found gone at.
    pub(crate) fn watch(&self, id: &mut Option<u64>, waker: Waker) -> Result<Timestamp, Timestamp> {
        let lease = &self.lease;
        self.shard
            .with_state(|state, now, later| state.watch(lease, id, now, waker, later))
    }

    /// Forgets the watcher that [`watch`](Self::watch) kept as `watcher`, if any, and
    /// clears it.
    pub(crate) fn unwatch(&self, watcher: &mut Option<u64>) {
        if let Some(id) = watcher.take() {
            let token = self.lease.token();
            self.shard
                .with_state(|state, _, later| state.unwatch(token, id, later));
        }
    }

    /// The clock the lease is measured on.
    pub(crate) fn clock(&self) -> &C {
        &self.shard.common.clock
    }
}

impl<C> Drop for Lock<C> {
    #[inline]
    fn drop(&mut self) {
        if self.release_on_drop {
            let lease = &self.lease;
            self.shard
                .with_state_unbound(|state, now, later| state.release(lease, now, later));
        }
    }
}

impl<C> fmt::Debug for Lock<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock")
            .field("name", &self.lease.name())
            .field("owner", &self.lease.owner())
            .field("token", &self.lease.token())
            .field("deadline", &self.deadline())
            .field("ttl", &self.ttl())
            .finish()
    }
}
