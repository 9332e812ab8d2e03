//! [`Locks`] and [`Lock`] under the shared contract ([`LockStore`], [`LockHandle`]), by
//! delegation to the inherent methods (which need no trait import).

use core::future::Future;
use core::time::Duration;

use alkstore_mem::{
    AcquireFuture, LeaseInfo, LockError, LockHandle, LockStore, MaybeSend, Snapshot, Timestamp,
};

use crate::acquire::Acquire;
use crate::lock::Lock;
use crate::protocol::Protocol;
use crate::store::Locks;
use crate::watch::{KeepAliveFuture, LapsedFuture};

impl<P: Protocol> LockStore for Locks<P> {
    type Lock = Lock<P>;
    type Acquire = Acquire<P>;

    fn try_lock(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
    ) -> impl Future<Output = Result<Option<Lock<P>>, LockError>> + MaybeSend {
        Locks::try_lock(self, name, owner, ttl)
    }

    fn acquire(&self, name: &str, owner: &str, ttl: Duration) -> Acquire<P> {
        Locks::acquire(self, name, owner, ttl)
    }

    fn holder(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<LeaseInfo>, LockError>> + MaybeSend {
        Locks::holder(self, name)
    }

    fn snapshot(&self) -> impl Future<Output = Result<Snapshot, LockError>> + MaybeSend {
        Locks::snapshot(self)
    }

    fn force_release(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<LeaseInfo>, LockError>> + MaybeSend {
        Locks::force_release(self, name)
    }
}

impl<P: Protocol> AcquireFuture<Lock<P>> for Acquire<P> {
    fn timeout(self, wait: Duration) -> Self {
        Acquire::timeout(self, wait)
    }
}

impl<P: Protocol> LockHandle for Lock<P> {
    type KeepAlive<'a> = KeepAliveFuture<'a>;
    type Lapsed<'a> = LapsedFuture<'a>;

    fn name(&self) -> &str {
        Lock::name(self)
    }

    fn owner(&self) -> &str {
        Lock::owner(self)
    }

    fn token(&self) -> u64 {
        Lock::token(self)
    }

    fn deadline(&self) -> Timestamp {
        Lock::deadline(self)
    }

    fn ttl(&self) -> Duration {
        Lock::ttl(self)
    }

    fn info(&self) -> LeaseInfo {
        Lock::info(self)
    }

    fn is_held(&self) -> impl Future<Output = Result<bool, LockError>> + MaybeSend {
        Lock::is_held(self)
    }

    fn renew(&mut self, ttl: Duration) -> impl Future<Output = Result<(), LockError>> + MaybeSend {
        Lock::renew(self, ttl)
    }

    fn release(self) -> impl Future<Output = Result<bool, LockError>> + MaybeSend {
        Lock::release(self)
    }

    fn detach(self) {
        Lock::detach(self);
    }

    fn keep_alive(&self, every: Duration) -> KeepAliveFuture<'_> {
        Lock::keep_alive(self, every)
    }

    fn lapsed(&self) -> LapsedFuture<'_> {
        Lock::lapsed(self)
    }
}
