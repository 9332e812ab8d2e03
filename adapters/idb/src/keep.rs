//! [`IdbLock::keep_alive`] and [`IdbLock::lapsed`]: watching a held lease.
//!
//! Both sleep to their next moment (a renewal, the deadline) on this context's estimate of
//! the engine's clock (see [`IdbLocks::now_us`](crate::IdbLocks)), and wake early to look at
//! the database when told over the `BroadcastChannel` (the lease was force-released, or
//! found lapsed by another context whose clock is ahead), when the connection was closed
//! under the store (the database may have been deleted), or when a look already found the
//! lease gone.

use core::sync::atomic::Ordering;
use core::time::Duration;

use alkstore_mem::LockError;

use crate::lock::IdbLock;
use crate::sys::{self, Registration};
use crate::util::{Either, race, sleep_us};
use crate::{BoxedFuture, IdbKeepAlive, IdbLapsed};

/// What a look at the database found.
enum Seen {
    /// Still live, as far as anyone can tell.
    Live,
    /// Gone: the reason to report.
    Lost(LockError),
}

impl IdbLock {
    /// Renews the lease to its [`ttl`](Self::ttl) while it is polled, and resolves only when
    /// the lease is lost, with the reason: [`LockError::Expired`] once a renewal is refused
    /// (lapsed, force-released, taken over by a context whose clock is ahead, or because this
    /// context looked dead to another: its presence Web Lock was taken) or cannot finish
    /// before the deadline; [`LockError::Unavailable`] when IndexedDB failed for good (a row
    /// it cannot read, quota) or the lease went with its database (deleted or upgraded by
    /// another connection: the message says so). A renewal that timed
    /// out (another context stalled the origin) is sent again while the deadline allows, so
    /// a stall shorter than the remaining lease costs nothing. Race it against the work,
    /// which may keep reading [`token`](Self::token) and [`deadline`](Self::deadline)
    /// meanwhile.
    ///
    /// It renews every `every`, recomputed from the current ttl at each turn: a zero `every`
    /// means a third of the ttl, and anything above half the ttl is clamped to half (so that
    /// a typo cannot turn keep-alive off). A renewal may take up to the
    /// [`io_timeout`](crate::IdbConfig::with_io_timeout): a ttl below twice the io_timeout
    /// is refused at the first poll with `InvalidTtl` (also later, if a
    /// [`renew`](Self::renew) shortened the ttl below it). That is a mistake in the caller,
    /// not a lost lease: [`try_keep_alive`](Self::try_keep_alive) refuses it when called, and
    /// [`IdbLocks::check_keep_alive_ttl`](crate::IdbLocks::check_keep_alive_ttl) before
    /// anything is acquired.
    ///
    /// # Example
    /// ```no_run
    /// # use core::time::Duration;
    /// # async fn work(token: u64) {}
    /// # async fn run(lock: alkstore_idb::IdbLock) -> Result<(), alkstore_idb::LockError> {
    /// use futures_lite::future::or;
    /// let alive = async { Err(lock.keep_alive(Duration::ZERO).await) };
    /// let done = async { work(lock.token()).await; Ok(()) };
    /// or(done, alive).await?; // the work stops if the lease is lost
    /// lock.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn keep_alive(&self, every: Duration) -> IdbKeepAlive<'_> {
        BoxedFuture::new(async move {
            let io = self.store.config().io_timeout();
            let watch = self.watch();
            loop {
                // The ttl may have changed since the last turn (a renew to another ttl).
                let ttl = self.ttl();
                if ttl < io.saturating_mul(2) {
                    return crate::util::too_short_to_keep_alive(ttl, io);
                }
                if let Seen::Lost(why) = self.recheck().await {
                    return why;
                }
                // Counted from the deadline: a keep-alive started late renews at once.
                let due = alkstore_mem::contract::next_renewal(self.deadline(), ttl, every)
                    .as_nanos()
                    / 1_000;
                let now = self.store.now_us();
                let deadline = self.deadline_us();
                if now >= deadline {
                    return self.expired(now);
                }
                if now < due {
                    let nap = sleep_us(due.min(deadline) - now);
                    if let Either::Right(()) = race(nap, watch.notified()).await {
                        if let Seen::Lost(why) = self.look_now().await {
                            return why;
                        }
                    }
                    continue;
                }
                // Due: renew, but never wait past the deadline for the answer.
                match race(self.renewal(ttl), sleep_us(deadline - now)).await {
                    Either::Left(Ok(Ok(_))) => {}
                    Either::Left(Ok(Err(now))) => return self.lost(now),
                    // Timed out (aborted: it changed nothing): again, while the deadline
                    // allows (the race above ends at the deadline).
                    Either::Left(Err(e)) if e.timed_out => {}
                    Either::Left(Err(e)) => return e.error,
                    Either::Right(()) => return self.expired(self.store.now_us()),
                }
            }
        })
    }

    /// [`keep_alive`](Self::keep_alive), with its ttl checked now: `Err(InvalidTtl)` at the
    /// call, never as the future's outcome, when the lease's [`ttl`](Self::ttl) is below twice
    /// the [`io_timeout`](crate::IdbConfig::with_io_timeout); otherwise the future, which then
    /// resolves only when the lease is lost (or a later `renew` shortened the ttl below that).
    ///
    /// # Errors
    /// [`LockError::InvalidTtl`] with [`TtlProblem::TooShortToKeepAlive`](alkstore_mem::TtlProblem).
    ///
    /// # Example
    /// ```no_run
    /// # use core::time::Duration;
    /// # async fn run(lock: alkstore_idb::IdbLock) -> Result<(), alkstore_idb::LockError> {
    /// let alive = lock.try_keep_alive(Duration::ZERO)?; // refused here, not later
    /// let lost = alive.await; // only when the lease is lost
    /// eprintln!("lost: {lost}");
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_keep_alive(&self, every: Duration) -> Result<IdbKeepAlive<'_>, LockError> {
        self.store.check_keep_alive_ttl(self.ttl())?;
        Ok(self.keep_alive(every))
    }

    /// Resolves once the lease is no longer held, with the reason as
    /// [`LockError::Expired`]: at the deadline on this context's estimate of the engine's
    /// clock (renewals push it out; the estimate runs on the monotonic clock from the last
    /// transaction, so a system clock stepping back does not delay it), or as soon as it
    /// learns the lease is gone: another context force-released it or found it lapsed (told
    /// over the `BroadcastChannel`), the connection was closed under the store (the database
    /// may have been deleted: it looks, and a lease gone with its database ends this with
    /// `Unavailable` saying so), or a renewal or [`is_held`](Self::is_held) already found
    /// it gone. Started late (after such a message reached this context, unheard by any
    /// watch of this lease), it looks at the database once at once. Between those moments it
    /// needs no transaction: time alone says so.
    ///
    /// # Example
    /// ```no_run
    /// # async fn run(lock: alkstore_idb::IdbLock) {
    /// let why = lock.lapsed().await;
    /// eprintln!("stop writing: {why}");
    /// # }
    /// ```
    pub fn lapsed(&self) -> IdbLapsed<'_> {
        BoxedFuture::new(async move {
            let watch = self.watch();
            loop {
                if let Seen::Lost(why) = self.recheck().await {
                    return why;
                }
                let now = self.store.now_us();
                let deadline = self.deadline_us();
                if now >= deadline {
                    return self.expired(now);
                }
                if let Either::Right(()) = race(sleep_us(deadline - now), watch.notified()).await {
                    if let Seen::Lost(why) = self.look_now().await {
                        return why;
                    }
                }
            }
        })
    }

    /// A sleeper woken by messages about this lease (its name, its token).
    fn watch(&self) -> Registration {
        self.store
            .inner
            .db
            .register(&sys::new_id(), &self.name, Some(self.token))
    }

    /// `Lost` if a look already found the lease gone, or (after one more look) when the
    /// connection was closed under the store since the last look (once per close: a look
    /// that fails is not tried again before the next wake-up), or when a message ending a
    /// lease reached this context since the last look: a watch started after the message
    /// was sent (no sleeper was registered to hear it) still learns at once.
    async fn recheck(&self) -> Seen {
        if self.lease.lost.load(Ordering::Relaxed) {
            return Seen::Lost(self.lost(self.store.now_us()));
        }
        let generation = self.store.inner.db.generation();
        let news = self.store.inner.db.news();
        let moved = self.lease.generation.swap(generation, Ordering::Relaxed) != generation;
        if self.lease.news.swap(news, Ordering::Relaxed) != news || moved {
            return self.look_now().await;
        }
        Seen::Live
    }

    /// Looks at the database now. A look that fails is no news: the lease may still be
    /// live, and the deadline still bounds the wait.
    async fn look_now(&self) -> Seen {
        match self.look().await {
            Ok(false) => Seen::Lost(self.lost(self.store.now_us())),
            Ok(true) | Err(_) => Seen::Live,
        }
    }
}
