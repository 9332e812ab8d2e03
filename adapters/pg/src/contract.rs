//! [`PgLocks`] under the shared contract ([`LockStore`]), by delegation to the inherent
//! methods (which need no trait import).

use core::future::Future;
use core::time::Duration;

use alkstore_mem::{
    AcquireFuture, LeaseInfo, LockError, LockHandle, LockStore, MaybeSend, Snapshot, Timestamp,
};

use crate::acquire::PgAcquire;
use crate::lock::{PgKeepAlive, PgLapsed, PgLock};
use crate::store::PgLocks;

impl LockStore for PgLocks {
    type Lock = PgLock;
    type Acquire = PgAcquire;

    fn try_lock(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
    ) -> impl Future<Output = Result<Option<PgLock>, LockError>> + MaybeSend {
        PgLocks::try_lock(self, name, owner, ttl)
    }

    fn acquire(&self, name: &str, owner: &str, ttl: Duration) -> PgAcquire {
        PgLocks::acquire(self, name, owner, ttl)
    }

    fn holder(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<LeaseInfo>, LockError>> + MaybeSend {
        PgLocks::holder(self, name)
    }

    fn snapshot(&self) -> impl Future<Output = Result<Snapshot, LockError>> + MaybeSend {
        PgLocks::snapshot(self)
    }

    fn force_release(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<LeaseInfo>, LockError>> + MaybeSend {
        PgLocks::force_release(self, name)
    }
}

impl AcquireFuture<PgLock> for PgAcquire {
    fn timeout(self, wait: Duration) -> Self {
        PgAcquire::timeout(self, wait)
    }
}

impl LockHandle for PgLock {
    type KeepAlive<'a> = PgKeepAlive<'a>;
    type Lapsed<'a> = PgLapsed<'a>;

    fn name(&self) -> &str {
        PgLock::name(self)
    }

    fn owner(&self) -> &str {
        PgLock::owner(self)
    }

    fn token(&self) -> u64 {
        PgLock::token(self)
    }

    fn deadline(&self) -> Timestamp {
        PgLock::deadline(self)
    }

    fn ttl(&self) -> Duration {
        PgLock::ttl(self)
    }

    fn info(&self) -> LeaseInfo {
        PgLock::info(self)
    }

    fn is_held(&self) -> impl Future<Output = Result<bool, LockError>> + MaybeSend {
        PgLock::is_held(self)
    }

    fn renew(&mut self, ttl: Duration) -> impl Future<Output = Result<(), LockError>> + MaybeSend {
        PgLock::renew(self, ttl)
    }

    fn release(self) -> impl Future<Output = Result<bool, LockError>> + MaybeSend {
        PgLock::release(self)
    }

    fn detach(self) {
        PgLock::detach(self);
    }

    fn keep_alive(&self, every: Duration) -> PgKeepAlive<'_> {
        PgLock::keep_alive(self, every)
    }

    fn lapsed(&self) -> PgLapsed<'_> {
        PgLock::lapsed(self)
    }
}
