//! [`IdbLock`]: a held lease, and its renew, release and watch operations.

use core::fmt;
use core::future::ready;
use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;

use alkstore_mem::{LeaseInfo, LockError, Timestamp};

use crate::store::IdbLocks;
use crate::tx::ops;
use crate::util::{Either, micros, race, sleep_us, stamp};
use crate::{BoxedFuture, IdbFuture, IdbKeepAlive, IdbLapsed};

/// A lease held in IndexedDB: the handle [`IdbLocks::try_lock`] and
/// [`IdbLocks::acquire`] hand out.
///
/// Dropping it releases the lease (the release transaction is sent at once and runs on its
/// own); [`detach`](Self::detach) lets the lease run to its deadline instead. A context that
/// goes away while holding a lease (a closed tab, a terminated worker) leaves it to lapse at
/// its deadline, when the first waiter, in whatever context, takes it.
#[must_use = "dropping an IdbLock releases it; call detach() to let the lease run to its deadline"]
pub struct IdbLock {
    store: IdbLocks,
    name: String,
    owner: String,
    token: u64,
    /// µs on the engine's clock; follows every renewal.
    deadline: AtomicU64,
    /// The ttl of the last grant or renew, as given: seconds and nanoseconds.
    ttl_secs: AtomicU64,
    ttl_nanos: AtomicU64,
    release_on_drop: bool,
}

impl IdbLock {
    pub(crate) fn new(
        store: IdbLocks,
        name: String,
        owner: String,
        token: u64,
        deadline_us: u64,
        ttl: Duration,
    ) -> Self {
        IdbLock {
            store,
            name,
            owner,
            token,
            deadline: AtomicU64::new(deadline_us),
            ttl_secs: AtomicU64::new(ttl.as_secs()),
            ttl_nanos: AtomicU64::new(u64::from(ttl.subsec_nanos())),
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

    /// The fencing token: larger than every token granted before it by this database, and
    /// kept by renewals. Pass it to whatever the lock protects (see the core's `Fence`), so
    /// that it can refuse a stale holder's writes.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// The deadline as of the last grant or renew (renewals by
    /// [`keep_alive`](Self::keep_alive) included), in nanoseconds since the Unix epoch on the
    /// engine's clock (`Date.now()`, µs precision): the lease is live while the clock is
    /// before it.
    pub fn deadline(&self) -> Timestamp {
        stamp(self.deadline_us())
    }

    fn deadline_us(&self) -> u64 {
        self.deadline.load(Ordering::Relaxed)
    }

    /// The ttl of the last grant or renew: what [`keep_alive`](Self::keep_alive) renews to.
    pub fn ttl(&self) -> Duration {
        Duration::new(
            self.ttl_secs.load(Ordering::Relaxed),
            self.ttl_nanos.load(Ordering::Relaxed) as u32,
        )
    }

    fn set_ttl(&self, ttl: Duration) {
        self.ttl_secs.store(ttl.as_secs(), Ordering::Relaxed);
        self.ttl_nanos
            .store(u64::from(ttl.subsec_nanos()), Ordering::Relaxed);
    }

    /// This grant as a [`LeaseInfo`] (name, owner, token, current deadline): what
    /// [`IdbLocks::holder`] reports while it is live.
    pub fn info(&self) -> LeaseInfo {
        LeaseInfo::new(&self.name, &self.owner, self.token, self.deadline())
    }

    /// `Expired` for this lease at engine time `now_us`.
    fn expired(&self, now_us: u64) -> LockError {
        crate::util::expired(
            &self.name,
            self.token,
            self.ttl(),
            self.deadline(),
            stamp(now_us),
        )
    }

    /// Whether the lease is still live now.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the transaction fails or times out.
    ///
    /// # Example
    /// ```no_run
    /// # async fn run(lock: alkstore_idb::IdbLock) -> Result<(), alkstore_idb::LockError> {
    /// if !lock.is_held().await? {
    ///     return Ok(()); // lapsed: stop writing
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_held(&self) -> IdbFuture<'static, bool> {
        let token = self.token;
        let tx = self
            .store
            .on_row(&self.name, move |row, cx| ops::is_held(row, cx, token));
        BoxedFuture::new(async move { Ok(tx.await?.is_some()) })
    }

    /// Resets the deadline to now + `ttl` (on the engine's clock) and keeps the token.
    ///
    /// # Errors
    /// [`LockError::InvalidTtl`] for a zero `ttl` (nothing sent); [`LockError::Expired`] at
    /// or after the deadline, or when the lease was lost (it stays lost);
    /// [`LockError::Unavailable`] when the transaction fails or times out (the lease then
    /// lapses at its deadline unless a later renew succeeds).
    ///
    /// # Example
    /// ```no_run
    /// # use core::time::Duration;
    /// # async fn run(mut lock: alkstore_idb::IdbLock) -> Result<(), alkstore_idb::LockError> {
    /// lock.renew(Duration::from_secs(30)).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn renew(&mut self, ttl: Duration) -> IdbFuture<'_, ()> {
        if ttl.is_zero() {
            return BoxedFuture::new(ready(Err(crate::util::zero_ttl())));
        }
        BoxedFuture::new(self.renew_now(ttl))
    }

    /// One renewal; `Ok` with the new deadline set on the handle.
    async fn renew_now(&self, ttl: Duration) -> Result<(), LockError> {
        let (token, ttl_us) = (self.token, micros(ttl));
        let (answer, now) = self
            .store
            .on_row(&self.name, move |row, cx| {
                (ops::renew(row, cx, token, ttl_us), cx.now)
            })
            .await?;
        match answer {
            Ok(deadline) => {
                self.deadline.store(deadline, Ordering::Relaxed);
                self.set_ttl(ttl);
                Ok(())
            }
            Err(()) => Err(self.expired(now)),
        }
    }

    /// Releases the lease: `Ok(true)` when it was live and is now free (or handed to the
    /// first waiter), `Ok(false)` when it had lapsed or was force-released. Compares the
    /// fencing token: never frees a newer lease. The transaction is sent when this is called,
    /// so dropping the future still releases.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the transaction fails or times out (the lease then
    /// lapses at its deadline).
    ///
    /// # Example
    /// ```no_run
    /// # async fn run(lock: alkstore_idb::IdbLock) -> Result<(), alkstore_idb::LockError> {
    /// if !lock.release().await? {
    ///     eprintln!("the lease had lapsed: another context may have written since");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn release(mut self) -> IdbFuture<'static, bool> {
        self.release_on_drop = false;
        let token = self.token;
        BoxedFuture::new(
            self.store
                .on_row(&self.name, move |row, cx| ops::release(row, cx, token)),
        )
    }

    /// Gives up the handle without releasing: the lease stays until its deadline.
    ///
    /// # Example
    /// ```no_run
    /// # async fn run(lock: alkstore_idb::IdbLock) {
    /// // Hand the work to a server that finishes within the lease; it lapses by itself.
    /// let token = lock.token();
    /// lock.detach();
    /// # let _ = token;
    /// # }
    /// ```
    pub fn detach(mut self) {
        self.release_on_drop = false;
    }

    /// Renews the lease to its [`ttl`](Self::ttl) while it is polled, and resolves only when
    /// the lease is lost, with the reason: [`LockError::Expired`] once a renewal is refused
    /// (lapsed, force-released) or cannot finish before the deadline, the renewal's
    /// [`LockError::Unavailable`] when IndexedDB failed. Race it against the work, which may
    /// keep reading [`token`](Self::token) and [`deadline`](Self::deadline) meanwhile.
    ///
    /// It renews every `every`, recomputed from the current ttl at each turn: a zero `every`
    /// means a third of the ttl, and anything above half the ttl is clamped to half (so that
    /// a typo cannot turn keep-alive off). A renewal may take up to the
    /// [`io_timeout`](crate::IdbConfig::with_io_timeout): a ttl below twice the io_timeout
    /// is refused at the first poll with `InvalidTtl`.
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
            let watch = self
                .store
                .inner
                .db
                .register(&crate::sys::new_id(), &self.name);
            loop {
                // The ttl may have changed since the last turn (a renew to another ttl).
                let ttl = self.ttl();
                if ttl < io.saturating_mul(2) {
                    return crate::util::too_short_to_keep_alive(ttl, io);
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
                        // Woken: force-released, or a test moved the clock. Look again.
                        match self.is_held().await {
                            Ok(true) => {}
                            Ok(false) => return self.expired(self.store.now_us()),
                            Err(err) => return err,
                        }
                    }
                    continue;
                }
                // Due: renew, but never wait past the deadline for the answer.
                let left = deadline - now;
                match race(self.renew_now(self.ttl()), sleep_us(left)).await {
                    Either::Left(Ok(())) => {}
                    Either::Left(Err(err)) => return err,
                    Either::Right(()) => return self.expired(self.store.now_us()),
                }
            }
        })
    }

    /// Resolves once the lease is no longer held, with the reason as
    /// [`LockError::Expired`]: at the deadline (renewals push it out), or as soon as another
    /// context force-released it (told over the `BroadcastChannel`). It needs no
    /// transaction to notice a lapse: time alone says so.
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
            let watch = self
                .store
                .inner
                .db
                .register(&crate::sys::new_id(), &self.name);
            loop {
                let now = self.store.now_us();
                let deadline = self.deadline_us();
                if now >= deadline {
                    return self.expired(now);
                }
                if let Either::Right(()) = race(sleep_us(deadline - now), watch.notified()).await {
                    if let Ok(false) = self.is_held().await {
                        return self.expired(self.store.now_us());
                    }
                }
            }
        })
    }
}

impl Drop for IdbLock {
    fn drop(&mut self) {
        if self.release_on_drop {
            let token = self.token;
            // Sent now; it runs on its own. If it fails, the lease lapses at its deadline.
            drop(
                self.store
                    .on_row(&self.name, move |row, cx| ops::release(row, cx, token)),
            );
        }
    }
}

impl fmt::Debug for IdbLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdbLock")
            .field("name", &self.name)
            .field("owner", &self.owner)
            .field("token", &self.token)
            .field("deadline", &self.deadline())
            .field("ttl", &self.ttl())
            .finish_non_exhaustive()
    }
}
