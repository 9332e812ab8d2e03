//! [`Lapsed`] and [`KeepAlive`]: the futures of [`Lock::lapsed`](crate::Lock::lapsed) and
//! [`Lock::keep_alive`](crate::Lock::keep_alive).
//!
//! Both sleep on the registry's clock and also keep their waker in the lease's shard (as a
//! watcher of the lease's token), so that a [`force_release`](crate::LockRegistry::force_release)
//! wakes them at once instead of at the next deadline or renewal. A deadline of
//! [`Timestamp::MAX`] never comes: there they sleep on nothing and wait for that wake-up only.

use alloc::boxed::Box;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use crate::contract::next_renewal;
use crate::error::LockError;
use crate::registry::Lock;
use crate::time::Timestamp;
use crate::timer::Timer;

/// A sleep on the lock's clock, kept while its deadline stays the same.
type Sleep<C> = Option<(Timestamp, Pin<Box<<C as Timer>::Sleep>>)>;

/// Sleeps until `until` on `clock`, reusing `sleep` when it already ends there. `Ready` once
/// the clock reads `until` (never for [`Timestamp::MAX`], which never comes).
fn sleep_until<C: Timer>(
    clock: &C,
    sleep: &mut Sleep<C>,
    until: Timestamp,
    cx: &mut Context<'_>,
) -> Poll<()> {
    if until == Timestamp::MAX {
        *sleep = None;
        return Poll::Pending;
    }
    let done = {
        let pinned = match &mut *sleep {
            Some((at, pinned)) if *at == until => pinned,
            slot => &mut slot.insert((until, Box::pin(clock.sleep_until(until)))).1,
        };
        pinned.as_mut().poll(cx)
    };
    if done.is_ready() {
        *sleep = None;
    }
    done
}

/// Resolves once a lease is no longer held, with how it ended ([`LockError::Expired`]): the
/// future of [`Lock::lapsed`].
///
/// It sleeps on the clock until the lease's deadline and checks again, so renewals push it
/// out; a [`force_release`](crate::LockRegistry::force_release) wakes it at once. Several may
/// watch one lock. Dropping it forgets its registration.
#[must_use = "futures do nothing unless polled"]
pub struct Lapsed<'a, C: Timer> {
    lock: &'a Lock<C>,
    sleep: Sleep<C>,
    /// Its id among the lease's watchers, once the registry keeps its waker.
    watcher: Option<u64>,
}

impl<'a, C: Timer> Lapsed<'a, C> {
    pub(crate) fn new(lock: &'a Lock<C>) -> Self {
        Lapsed {
            lock,
            sleep: None,
            watcher: None,
        }
    }
}

impl<C: Timer> Future for Lapsed<'_, C> {
    type Output = LockError;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<LockError> {
        let this = self.get_mut();
        loop {
            // Cloned here, outside the registry's lock: a waker's clone is user code.
            let deadline = match this.lock.watch(&mut this.watcher, cx.waker().clone()) {
                Ok(deadline) => deadline,
                Err(now) => {
                    this.sleep = None;
                    let how = this.lock.expired_at(now);
                    this.lock.saw_lapse(&how);
                    return Poll::Ready(how);
                }
            };
            // The deadline came: look again (a renewal may have moved it).
            if sleep_until(this.lock.clock(), &mut this.sleep, deadline, cx).is_pending() {
                return Poll::Pending;
            }
        }
    }
}

impl<C: Timer> Drop for Lapsed<'_, C> {
    fn drop(&mut self) {
        self.lock.unwatch(&mut self.watcher);
    }
}

impl<C: Timer> fmt::Debug for Lapsed<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lapsed")
            .field("token", &self.lock.token())
            .field("sleeping_until", &self.sleep.as_ref().map(|s| s.0))
            .finish()
    }
}

/// Renews a lease until a renewal fails: the future of [`Lock::keep_alive`].
///
/// Resolves to the error of the renewal that failed ([`LockError::Expired`] once the lease
/// is lost). A [`force_release`](crate::LockRegistry::force_release) wakes it at once, and it
/// resolves then. Dropping it stops the renewals (the lease then runs to its deadline). It
/// borrows the lock shared, so the work it guards can read the handle meanwhile.
#[must_use = "futures do nothing unless polled; the lease is renewed only while this is"]
pub struct KeepAlive<'a, C: Timer> {
    lock: &'a Lock<C>,
    /// The interval as asked; each turn clamps it to the current ttl.
    every: Duration,
    /// When the next renewal is due, once the first poll set it.
    next: Option<Timestamp>,
    sleep: Sleep<C>,
    watcher: Option<u64>,
}

impl<'a, C: Timer> KeepAlive<'a, C> {
    pub(crate) fn new(lock: &'a Lock<C>, every: Duration) -> Self {
        KeepAlive {
            lock,
            every,
            next: None,
            sleep: None,
            watcher: None,
        }
    }
}

impl<C: Timer> Future for KeepAlive<'_, C> {
    type Output = LockError;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<LockError> {
        let this = self.get_mut();
        loop {
            let next = *this.next.get_or_insert_with(|| {
                next_renewal(this.lock.deadline(), this.lock.ttl(), this.every)
            });
            let live = this.lock.watch(&mut this.watcher, cx.waker().clone());
            if live.is_ok()
                && sleep_until(this.lock.clock(), &mut this.sleep, next, cx).is_pending()
            {
                return Poll::Pending;
            }
            // The renewal is due, or the lease ended early: renew, which says which.
            this.next = None;
            if let Err(err) = this.lock.renew_shared(this.lock.ttl()) {
                // Done: no sleep and no registration outlive the answer.
                this.sleep = None;
                this.lock.unwatch(&mut this.watcher);
                this.lock.saw_lapse(&err);
                return Poll::Ready(err);
            }
        }
    }
}

impl<C: Timer> Drop for KeepAlive<'_, C> {
    fn drop(&mut self) {
        self.lock.unwatch(&mut self.watcher);
    }
}

impl<C: Timer> fmt::Debug for KeepAlive<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeepAlive")
            .field("token", &self.lock.token())
            .field("every", &self.every)
            .field("next_renewal", &self.next)
            .finish()
    }
}

/// The futures built on a held lease; they live here, next to the futures they return.
impl<C: Timer> Lock<C> {
    /// Renews the lease to its [`ttl`](Self::ttl) every `every` and returns only when a
    /// renewal fails, with that error: [`LockError::Expired`] once the lease is lost (it
    /// lapsed between renewals, or was [`force_release`](crate::LockRegistry::force_release)d).
    /// Race it against the work, so that the work stops when the lease is gone; dropping the
    /// future stops the renewals. It takes `&self`: the work can read the handle meanwhile.
    ///
    /// The interval is [`keep_alive_interval`](crate::contract::keep_alive_interval): zero
    /// means a third of the ttl, and anything above half the ttl is clamped to half, so that
    /// a typo cannot turn keep-alive off.
    ///
    /// # Example
    /// ```
    /// use alkstore_mem::{LockError, LockRegistry, ManualClock};
    /// use core::pin::pin;
    /// use core::task::{Context, Poll, Waker};
    /// use core::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let registry = LockRegistry::new(clock.clone());
    /// let mut lock = registry.try_lock("job", "a", Duration::from_secs(3))?.unwrap();
    /// let token = lock.token();
    /// {
    ///     let mut alive = pin!(lock.keep_alive(Duration::from_secs(1)));
    ///     let mut cx = Context::from_waker(Waker::noop());
    ///     for _ in 0..10 {
    ///         assert!(alive.as_mut().poll(&mut cx).is_pending());
    ///         assert_eq!(lock.token(), token, "the handle is readable meanwhile");
    ///         clock.advance(Duration::from_secs(1)); // each second, a renewal to 3 s
    ///     }
    ///     assert_eq!(registry.holder("job").unwrap().token(), token, "renewed, still held");
    ///     registry.force_release("job");
    ///     clock.advance(Duration::from_secs(1));
    ///     let Poll::Ready(err) = alive.as_mut().poll(&mut cx) else { panic!() };
    ///     assert!(matches!(err, LockError::Expired { .. }));
    /// }
    /// # Ok::<(), LockError>(())
    /// ```
    pub fn keep_alive(&self, every: Duration) -> KeepAlive<'_, C> {
        KeepAlive::new(self, every)
    }

    /// Resolves once the lease is no longer held (lapsed, released through another path, or
    /// force-released), with how it ended: [`LockError::Expired`]. It sleeps to the deadline
    /// and checks again, so renewals push it out.
    ///
    /// # Example
    /// ```
    /// use alkstore_mem::{LockRegistry, ManualClock};
    /// use core::pin::pin;
    /// use core::task::{Context, Poll, Waker};
    /// use core::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let registry = LockRegistry::new(clock.clone());
    /// let lock = registry.try_lock("job", "a", Duration::from_secs(5))?.unwrap();
    /// let mut lapsed = pin!(lock.lapsed());
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert!(lapsed.as_mut().poll(&mut cx).is_pending());
    /// clock.advance(Duration::from_secs(7));
    /// let Poll::Ready(why) = lapsed.as_mut().poll(&mut cx) else { panic!() };
    /// assert_eq!(
    ///     why.to_string(),
    ///     "lease on lock \"job\" (fencing token 1) lapsed 2s ago, at the end of its 5s ttl"
    /// );
    /// # Ok::<(), alkstore_mem::LockError>(())
    /// ```
    pub fn lapsed(&self) -> Lapsed<'_, C> {
        Lapsed::new(self)
    }
}
