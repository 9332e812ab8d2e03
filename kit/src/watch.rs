//! [`Lock::keep_alive`] and [`Lock::lapsed`]: the loops that renew a lease and watch it end,
//! written once for every engine.

use std::time::Duration;

use alkstore_mem::contract::next_renewal;
use alkstore_mem::{BoxedFuture, LockError};

use crate::call::need_runtime;
use crate::errors::too_short_to_keep_alive;
use crate::lock::{Live, Lock};
use crate::protocol::{Protocol, Settings};

/// How long [`Lock::keep_alive`] waits before it asks again after a renewal that got no
/// answer about the lease (`Unavailable`), while the deadline is still ahead.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// The future of [`Lock::keep_alive`]: resolves only when the lease is lost, with why.
pub type KeepAliveFuture<'a> = BoxedFuture<'a, LockError>;

/// The future of [`Lock::lapsed`]: resolves once the lease is no longer held, with why.
pub type LapsedFuture<'a> = BoxedFuture<'a, LockError>;

impl<P: Protocol> Lock<P> {
    /// Renews the lease to its [`ttl`](Self::ttl) every `every` and resolves only when it is
    /// lost, with why: [`LockError::Expired`] once a renewal is refused (lapsed, released
    /// elsewhere, force-released) or no renewal could be answered before the deadline. A
    /// renewal that ends in [`LockError::Unavailable`] (the engine did not answer within the
    /// `io_timeout`, a connection broke, another connection held SQLite's write lock) says
    /// nothing about the lease, which is live until its deadline: it is asked again every
    /// 50 ms or so while that deadline is ahead, and the lease counts as lost only once it
    /// has passed by the local estimate of the engine's clock (which errs early). It
    /// resolves with `Unavailable` only with no tokio runtime. Takes `&self`:
    /// race it against the work (`tokio::select!`), which may use the lock meanwhile.
    ///
    /// `every` zero means a third of the ttl; anything above half the ttl is half the ttl
    /// (see [`keep_alive_interval`](alkstore_mem::contract::keep_alive_interval)). A renewal
    /// may take up to the `io_timeout`, so a lease whose ttl is below twice the `io_timeout`
    /// is refused at once with [`LockError::InvalidTtl`]
    /// ([`TtlProblem::TooShortToKeepAlive`](alkstore_mem::TtlProblem::TooShortToKeepAlive)):
    /// with a ttl of at least that and renewals every half ttl or sooner, each renewal has its
    /// whole `io_timeout` before the deadline. It never runs past the deadline of the last
    /// renewal the engine confirmed, by a local estimate of the engine's clock that errs
    /// early. A force-release wakes it to check at once.
    pub fn keep_alive(&self, every: Duration) -> KeepAliveFuture<'_> {
        BoxedFuture::new(self.keep_alive_inner(every))
    }

    async fn keep_alive_inner(&self, every: Duration) -> LockError {
        let io_timeout = self.store.config().io_timeout();
        // Refused when called, never later as if the lease were lost.
        let ttl = self.ttl();
        if ttl < io_timeout.saturating_mul(2) {
            return too_short_to_keep_alive(ttl, io_timeout);
        }
        // Its timers need a runtime: without one, it ends as every call does.
        if let Err(err) = need_runtime(P::NAME) {
            return err;
        }
        // Wake-ups (a moved test clock, a force-release) make it ask the engine early. The
        // anchor was read before this registration: a wake-up published in between reached
        // nobody, so the first turn asks again instead of sleeping on the old reading.
        let wake = self.store.register(crate::new_id());
        wake.poke();
        loop {
            let Live {
                deadline,
                ttl,
                anchor,
                ..
            } = *self.live();
            // The ttl may have changed since the last turn (a renew to another ttl).
            if ttl < io_timeout.saturating_mul(2) {
                return too_short_to_keep_alive(ttl, io_timeout);
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
                    // Woken early: make sure the lease is still held, and renew only if due.
                    match tokio::time::timeout(left, self.check()).await {
                        Ok(Ok(Ok(_))) if self.anchor().server < next => continue,
                        Ok(Ok(Ok(_))) => {}
                        Ok(Ok(Err(gone))) => return gone,
                        // No answer about the lease: the renewal below asks again.
                        Ok(Err(_)) => {}
                        Err(_) => return self.expired(),
                    }
                }
            }
            // Every renewal gets no more than the time left until the deadline.
            let left = self.anchor().until(self.deadline());
            if left.is_zero() {
                return self.expired();
            }
            match self.renew_within(self.ttl(), Some(left)).await {
                Ok(_) => {}
                // Not an answer about the lease (the engine did not answer in time, or its
                // write lock was held by someone else's long transaction): the lease is
                // live until its deadline, so try again while the deadline is ahead, after
                // a short pause (an engine that refuses at once is not asked in a spin).
                Err(LockError::Unavailable { .. }) => {
                    let left = self.anchor().until(self.deadline());
                    if left.is_zero() {
                        return self.expired();
                    }
                    tokio::select! {
                        () = tokio::time::sleep(RETRY_PAUSE.min(left)) => {}
                        () = wake.notified() => {}
                    }
                }
                Err(err) => return err,
            }
        }
    }

    /// Resolves once the lease is no longer held (lapsed, released elsewhere,
    /// force-released), with how it ended ([`LockError::Expired`]). It sleeps to the deadline
    /// and asks the engine again, so renewals push it out. While the engine cannot be reached
    /// it resolves at the deadline by the local estimate of the engine's clock (which errs
    /// early, never late): no call may delay it past that.
    pub fn lapsed(&self) -> LapsedFuture<'_> {
        BoxedFuture::new(self.lapsed_inner())
    }

    async fn lapsed_inner(&self) -> LockError {
        if let Err(err) = need_runtime(P::NAME) {
            return err;
        }
        let wake = self.store.register(crate::new_id());
        loop {
            let left = self.anchor().until(self.deadline());
            if left.is_zero() {
                return self.expired();
            }
            let pause = match tokio::time::timeout(left, self.check()).await {
                // The deadline came first.
                Err(_) => return self.expired(),
                Ok(Ok(Err(gone))) => return gone,
                Ok(Ok(Ok(_))) => self.anchor().until(self.deadline()),
                Ok(Err(_)) => left.min(Duration::from_millis(250)),
            };
            let pause = pause + Duration::from_millis(1);
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = wake.notified() => {}
            }
        }
    }
}
