//! The in-memory engine under the shared contract: [`LockRegistry`] as a [`LockStore`].
//!
//! Every future here is ready at once, computed by the registry's synchronous methods when
//! the trait method is called, so generic code costs the in-memory engine nothing.

use core::future::{Future, ready};
use core::time::Duration;

use crate::acquire::Acquire;
use crate::contract::{AcquireFuture, LockHandle, LockStore, MaybeSend, MaybeSync};
use crate::error::LockError;
use crate::lapsed::{KeepAlive, Lapsed};
use crate::lease::LeaseInfo;
use crate::registry::{Lock, LockRegistry};
use crate::snapshot::Snapshot;
use crate::time::Timestamp;
use crate::timer::Timer;

impl<C> LockStore for LockRegistry<C>
where
    C: Timer + MaybeSend + MaybeSync,
    C::Sleep: MaybeSend,
{
    type Lock = Lock<C>;
    type Acquire = Acquire<C>;

    #[inline]
    fn try_lock(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
    ) -> impl Future<Output = Result<Option<Lock<C>>, LockError>> + MaybeSend {
        ready(LockRegistry::try_lock(self, name, owner, ttl))
    }

    fn acquire(&self, name: &str, owner: &str, ttl: Duration) -> Acquire<C> {
        LockRegistry::acquire(self, name, owner, ttl)
    }

    fn holder(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<LeaseInfo>, LockError>> + MaybeSend {
        ready(Ok(LockRegistry::holder(self, name)))
    }

    fn snapshot(&self) -> impl Future<Output = Result<Snapshot, LockError>> + MaybeSend {
        ready(Ok(LockRegistry::snapshot(self)))
    }

    fn force_release(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<LeaseInfo>, LockError>> + MaybeSend {
        ready(Ok(LockRegistry::force_release(self, name)))
    }
}

impl<C> AcquireFuture<Lock<C>> for Acquire<C>
where
    C: Timer,
    Self: MaybeSend,
{
    fn timeout(self, wait: Duration) -> Self {
        Acquire::timeout(self, wait)
    }
}

impl<C> LockHandle for Lock<C>
where
    C: Timer + MaybeSend + MaybeSync,
    C::Sleep: MaybeSend,
{
    type KeepAlive<'a>
        = KeepAlive<'a, C>
    where
        C: 'a;
    type Lapsed<'a>
        = Lapsed<'a, C>
    where
        C: 'a;

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
        ready(Ok(Lock::is_held(self)))
    }

    #[inline]
    fn renew(&mut self, ttl: Duration) -> impl Future<Output = Result<(), LockError>> + MaybeSend {
        ready(Lock::renew(self, ttl))
    }

    #[inline]
    fn release(self) -> impl Future<Output = Result<bool, LockError>> + MaybeSend {
        ready(Ok(Lock::release(self)))
    }

    fn detach(self) {
        Lock::detach(self);
    }

    fn keep_alive(&self, every: Duration) -> KeepAlive<'_, C> {
        Lock::keep_alive(self, every)
    }

    fn lapsed(&self) -> Lapsed<'_, C> {
        Lock::lapsed(self)
    }
}
