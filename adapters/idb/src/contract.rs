//! [`IdbLocks`] under the shared contract ([`LockStore`], [`LockHandle`]), by delegation to
//! the inherent methods (which need no trait import).

use core::future::Future;
use core::time::Duration;

use alkstore_mem::{
    AcquireFuture, LeaseInfo, LockError, LockHandle, LockStore, MaybeSend, Snapshot, Timestamp,
};

use crate::acquire::IdbAcquire;
use crate::lock::IdbLock;
use crate::store::IdbLocks;
use crate::{IdbKeepAlive, IdbLapsed};

impl LockStore for IdbLocks {
    type Lock = IdbLock;
    type Acquire = IdbAcquire;

    fn try_lock(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
    ) -> impl Future<Output = Result<Option<IdbLock>, LockError>> + MaybeSend {
        IdbLocks::try_lock(self, name, owner, ttl)
    }

    fn acquire(&self, name: &str, owner: &str, ttl: Duration) -> IdbAcquire {
        IdbLocks::acquire(self, name, owner, ttl)
    }

    fn holder(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<LeaseInfo>, LockError>> + MaybeSend {
        IdbLocks::holder(self, name)
    }

    fn snapshot(&self) -> impl Future<Output = Result<Snapshot, LockError>> + MaybeSend {
        IdbLocks::snapshot(self)
    }

    fn force_release(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<LeaseInfo>, LockError>> + MaybeSend {
        IdbLocks::force_release(self, name)
    }
}

impl AcquireFuture<IdbLock> for IdbAcquire {
    fn timeout(self, wait: Duration) -> Self {
        IdbAcquire::timeout(self, wait)
    }
}

impl LockHandle for IdbLock {
    type KeepAlive<'a> = IdbKeepAlive<'a>;
    type Lapsed<'a> = IdbLapsed<'a>;

    fn name(&self) -> &str {
        IdbLock::name(self)
    }

    fn owner(&self) -> &str {
        IdbLock::owner(self)
    }

    fn token(&self) -> u64 {
        IdbLock::token(self)
    }

    fn deadline(&self) -> Timestamp {
        IdbLock::deadline(self)
    }

    fn ttl(&self) -> Duration {
        IdbLock::ttl(self)
    }

    fn info(&self) -> LeaseInfo {
        IdbLock::info(self)
    }

    fn is_held(&self) -> impl Future<Output = Result<bool, LockError>> + MaybeSend {
        IdbLock::is_held(self)
    }

    fn renew(&mut self, ttl: Duration) -> impl Future<Output = Result<(), LockError>> + MaybeSend {
        IdbLock::renew(self, ttl)
    }

    fn release(self) -> impl Future<Output = Result<bool, LockError>> + MaybeSend {
        IdbLock::release(self)
    }

    fn detach(self) {
        IdbLock::detach(self);
    }

    fn keep_alive(&self, every: Duration) -> IdbKeepAlive<'_> {
        IdbLock::keep_alive(self, every)
    }

    fn lapsed(&self) -> IdbLapsed<'_> {
        IdbLock::lapsed(self)
    }
}
