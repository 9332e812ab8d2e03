//! [`RedisLocks`] under the shared contract ([`LockStore`]), by delegation to the inherent
//! methods (which need no trait import).

use core::future::Future;
use core::time::Duration;

use alkstore_mem::{
    AcquireFuture, LeaseInfo, LockError, LockHandle, LockStore, MaybeSend, Snapshot, Timestamp,
};

use crate::acquire::RedisAcquire;
use crate::lock::{RedisKeepAlive, RedisLapsed, RedisLock};
use crate::store::RedisLocks;

impl LockStore for RedisLocks {
    type Lock = RedisLock;
    type Acquire = RedisAcquire;

    fn try_lock(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
    ) -> impl Future<Output = Result<Option<RedisLock>, LockError>> + MaybeSend {
        RedisLocks::try_lock(self, name, owner, ttl)
    }

    fn acquire(&self, name: &str, owner: &str, ttl: Duration) -> RedisAcquire {
        RedisLocks::acquire(self, name, owner, ttl)
    }

    fn holder(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<LeaseInfo>, LockError>> + MaybeSend {
        RedisLocks::holder(self, name)
    }

    fn snapshot(&self) -> impl Future<Output = Result<Snapshot, LockError>> + MaybeSend {
        RedisLocks::snapshot(self)
    }

    fn force_release(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<LeaseInfo>, LockError>> + MaybeSend {
        RedisLocks::force_release(self, name)
    }
}

impl AcquireFuture<RedisLock> for RedisAcquire {
    fn timeout(self, wait: Duration) -> Self {
        RedisAcquire::timeout(self, wait)
    }
}

impl LockHandle for RedisLock {
    type KeepAlive<'a> = RedisKeepAlive<'a>;
    type Lapsed<'a> = RedisLapsed<'a>;

    fn name(&self) -> &str {
        RedisLock::name(self)
    }

    fn owner(&self) -> &str {
        RedisLock::owner(self)
    }

    fn token(&self) -> u64 {
        RedisLock::token(self)
    }

    fn deadline(&self) -> Timestamp {
        RedisLock::deadline(self)
    }

    fn ttl(&self) -> Duration {
        RedisLock::ttl(self)
    }

    fn info(&self) -> LeaseInfo {
        RedisLock::info(self)
    }

    fn is_held(&self) -> impl Future<Output = Result<bool, LockError>> + MaybeSend {
        RedisLock::is_held(self)
    }

    fn renew(&mut self, ttl: Duration) -> impl Future<Output = Result<(), LockError>> + MaybeSend {
        RedisLock::renew(self, ttl)
    }

    fn release(self) -> impl Future<Output = Result<bool, LockError>> + MaybeSend {
        RedisLock::release(self)
    }

    fn detach(self) {
        RedisLock::detach(self);
    }

    fn keep_alive(&self, every: Duration) -> RedisKeepAlive<'_> {
        RedisLock::keep_alive(self, every)
    }

    fn lapsed(&self) -> RedisLapsed<'_> {
        RedisLock::lapsed(self)
    }
}
