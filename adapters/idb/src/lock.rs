//! [`IdbLock`]: a held lease, and its renew, release and watch operations.

use core::fmt;
use core::future::{Future, ready};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use core::time::Duration;

use alkstore_mem::{LeaseInfo, LockError, Timestamp};

use crate::store::IdbLocks;
use crate::sys::{OnCommit, TxError};
use crate::tx::ops;
use crate::util::{micros, stamp};
use crate::{BoxedFuture, IdbFuture, Shared};

/// A lease held in IndexedDB: the handle [`IdbLocks::try_lock`] and
/// [`IdbLocks::acquire`] hand out.
///
/// Dropping it releases the lease: the release transaction is sent at once and runs on its
/// own, also when the connection was closed under the store (it is opened again first, in
/// the background). [`detach`](Self::detach) lets the lease run to its deadline instead
/// (while this context lives: dropping every store of the context does not end it). A
/// context that dies while holding a lease (its tab closed, its worker terminated) frees it
/// at once: the first waiter, in whatever context, takes it (a context without Web Locks, or
/// opened with [`IdbConfig::with_presence(false)`](crate::IdbConfig::with_presence), leaves
/// it to lapse at its deadline).
#[must_use = "dropping an IdbLock releases it; call detach() to let the lease run to its deadline"]
pub struct IdbLock {
    pub(crate) store: IdbLocks,
    pub(crate) name: String,
    pub(crate) owner: String,
    pub(crate) token: u64,
    pub(crate) lease: Shared<LeaseState>,
    release_on_drop: bool,
}

/// What a handle knows of its lease, shared with the commit hooks of its renewals: a
/// renewal that committed is applied even when its future was dropped in flight, so the
/// handle follows what the database holds.
pub(crate) struct LeaseState {
    /// µs on the engine's clock; follows every committed renewal.
    deadline: AtomicU64,
    /// The ttl of the last grant or renew, as given: seconds and nanoseconds.
    ttl_secs: AtomicU64,
    ttl_nanos: AtomicU64,
    /// The database answered that the lease is gone (a refused renewal, `is_held` false).
    pub(crate) lost: AtomicBool,
    /// The store's connection generation this handle last looked at the database in.
    pub(crate) generation: AtomicU64,
    /// How many messages ending a lease the store had received when this handle last
    /// looked (or was granted): one that came since may be about this lease.
    pub(crate) news: AtomicU64,
    /// The store's connection generation when the lease was granted: a loss found after the
    /// browser closed that connection (the database deleted or upgraded elsewhere) says so.
    born: u64,
}

impl LeaseState {
    fn set_ttl(&self, ttl: Duration) {
        self.ttl_secs.store(ttl.as_secs(), Ordering::Relaxed);
        self.ttl_nanos
            .store(u64::from(ttl.subsec_nanos()), Ordering::Relaxed);
    }
}

/// A renewal's answer: the new deadline, or `Err(now)` (engine time) when it was refused.
pub(crate) type Renewed = Result<u64, u64>;

impl IdbLock {
    pub(crate) fn new(
        store: IdbLocks,
        name: String,
        owner: String,
        token: u64,
        deadline_us: u64,
        ttl: Duration,
    ) -> Self {
        let generation = store.inner.db.generation();
        #[allow(clippy::arc_with_non_send_sync)]
        let lease = Shared::new(LeaseState {
            deadline: AtomicU64::new(deadline_us),
            ttl_secs: AtomicU64::new(ttl.as_secs()),
            ttl_nanos: AtomicU64::new(u64::from(ttl.subsec_nanos())),
            lost: AtomicBool::new(false),
            generation: AtomicU64::new(generation),
            news: AtomicU64::new(store.inner.db.news()),
            born: generation,
        });
        IdbLock {
            store,
            name,
            owner,
            token,
            lease,
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

    pub(crate) fn deadline_us(&self) -> u64 {
        self.lease.deadline.load(Ordering::Relaxed)
    }

    /// The ttl of the last grant or renew: what [`keep_alive`](Self::keep_alive) renews to.
    pub fn ttl(&self) -> Duration {
        Duration::new(
            self.lease.ttl_secs.load(Ordering::Relaxed),
            self.lease.ttl_nanos.load(Ordering::Relaxed) as u32,
        )
    }

    /// This grant as a [`LeaseInfo`] (name, owner, token, current deadline): what
    /// [`IdbLocks::holder`] reports while it is live.
    pub fn info(&self) -> LeaseInfo {
        LeaseInfo::new(&self.name, &self.owner, self.token, self.deadline())
    }

    /// Why the lease is gone, when this handle knows it without a transaction: a renewal or
    /// a look ([`is_held`](Self::is_held), [`lapsed`](Self::lapsed),
    /// [`keep_alive`](Self::keep_alive)) found it gone, or its deadline passed on this
    /// context's estimate of the engine's clock. `None` says only that nothing is known:
    /// another context may have force-released it (`lapsed` learns that at once).
    ///
    /// # Example
    /// ```no_run
    /// # fn run(lock: &alkstore_idb::IdbLock) {
    /// if let Some(why) = lock.known_lost() {
    ///     eprintln!("stop writing: {why}");
    /// }
    /// # }
    /// ```
    pub fn known_lost(&self) -> Option<LockError> {
        let now = self.store.now_us();
        if self.lease.lost.load(Ordering::Relaxed) {
            return Some(self.lost(now));
        }
        (now >= self.deadline_us()).then(|| self.expired(now))
    }

    /// `Expired` for this lease at engine time `now_us`.
    pub(crate) fn expired(&self, now_us: u64) -> LockError {
        crate::util::expired(
            &self.name,
            self.token,
            self.ttl(),
            self.deadline(),
            stamp(now_us),
        )
    }

    /// Why the lease is gone, found at engine time `now_us`: `Expired`, or, when the browser
    /// closed the store's connection since the grant (the database was deleted or upgraded
    /// by another connection: site data cleared, another version of the app), `Unavailable`
    /// saying so, rather than an `Expired` that reads as a release before the deadline.
    pub(crate) fn lost(&self, now_us: u64) -> LockError {
        if self.store.inner.db.generation() == self.lease.born {
            return self.expired(now_us);
        }
        crate::util::unavailable(format!(
            "the lease on lock {:?} (fencing token {}) is gone with its database: IndexedDB \
             database {:?} was deleted or upgraded by another connection (site data cleared, \
             or another version of the app) since the lease was granted, and no longer holds it",
            self.name,
            self.token,
            self.store.database_name()
        ))
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
        let look = self.look();
        BoxedFuture::new(async move { Ok(look.await?) })
    }

    /// One look at the database: whether the lease is live; a `false` is remembered (a lost
    /// lease never comes back: its token is never granted again).
    pub(crate) fn look(&self) -> impl Future<Output = Result<bool, TxError>> + 'static {
        let (token, owner) = (self.token, self.owner.clone());
        let lease = Shared::clone(&self.lease);
        let on_commit: OnCommit<Option<u64>> = Box::new(move |held| {
            if held.is_none() {
                lease.lost.store(true, Ordering::Relaxed);
            }
        });
        let tx = self.store.on_row_then(
            &self.name,
            move |row, cx| ops::is_held(row, cx, token, &owner),
            Some(on_commit),
        );
        async move { Ok(tx.await?.is_some()) }
    }

    /// Resets the deadline to now + `ttl` (on the engine's clock) and keeps the token.
    ///
    /// # Errors
    /// [`LockError::InvalidTtl`] for a zero `ttl` (nothing sent); [`LockError::Expired`] at
    /// or after the deadline, or when the lease was lost (it stays lost); `Unavailable`
    /// saying so when it was lost with its database (deleted or upgraded elsewhere);
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
        let renewal = self.renewal(ttl);
        BoxedFuture::new(async move {
            match renewal.await? {
                Ok(_) => Ok(()),
                Err(now) => Err(self.lost(now)),
            }
        })
    }

    /// One renewal, sent now. Its answer is applied to the handle when it commits (the new
    /// deadline and ttl, or the lease marked lost), whether or not the future is still
    /// polled: a renewal dropped in flight (a `select!` that chose another branch) leaves
    /// the handle's [`info`](Self::info) equal to what [`IdbLocks::holder`] reports.
    pub(crate) fn renewal(
        &self,
        ttl: Duration,
    ) -> impl Future<Output = Result<Renewed, TxError>> + 'static {
        let (token, owner, ttl_us) = (self.token, self.owner.clone(), micros(ttl));
        let lease = Shared::clone(&self.lease);
        let on_commit: OnCommit<Renewed> = Box::new(move |renewed| match renewed {
            Ok(deadline) => {
                lease.deadline.store(*deadline, Ordering::Relaxed);
                lease.set_ttl(ttl);
            }
            Err(_) => lease.lost.store(true, Ordering::Relaxed),
        });
        self.store.on_row_then(
            &self.name,
            move |row, cx| ops::renew(row, cx, token, &owner, ttl_us).map_err(|()| cx.now),
            Some(on_commit),
        )
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
        BoxedFuture::new(self.send_release())
    }

    /// The release transaction, sent now.
    fn send_release(&self) -> impl Future<Output = Result<bool, LockError>> + 'static {
        let (token, owner) = (self.token, self.owner.clone());
        self.store.on_row(&self.name, move |row, cx| {
            ops::release(row, cx, token, &owner)
        })
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
}

impl Drop for IdbLock {
    fn drop(&mut self) {
        if self.release_on_drop {
            // Sent now (after opening the connection again if it was closed); it runs on its
            // own. If it fails, the lease lapses at its deadline.
            drop(self.send_release());
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
