//! [`RedisLock`]: the kit's handle on the Redis engine, and what it means there.

use crate::store::Redis;

/// A lease held in Redis: the handle [`RedisLocks::try_lock`](crate::RedisLocks) and
/// [`RedisLocks::acquire`](crate::RedisLocks) hand out (the kit's
/// [`Lock`](alkstore_kit::Lock) on the [`Redis`] engine).
///
/// Its deadline is on the server's clock (`TIME`, plus the test offset in `test-clock`
/// builds). [`renew`](alkstore_kit::Lock::renew) runs `renew.lua`, an absolute reset to the
/// server's now + ttl; [`release`](alkstore_kit::Lock::release) runs `release.lua`, which
/// compares the token and hands the name to the first live waiter inside the same script.
///
/// Dropping it releases the lease: in a task spawned on the current tokio runtime, or, when
/// there is no runtime or the runtime shuts down before that task ran (a lock dropped as
/// `#[tokio::main]` returns), on a helper thread with a connection of its own
/// ([`RedisFallback`](crate::RedisFallback)), which the drop (or the runtime's shutdown)
/// waits for, up to the `io_timeout`. If Redis cannot be reached then, the lease lapses at
/// its deadline. [`release`](alkstore_kit::Lock::release) explicitly is still the better way:
/// it tells you whether the lease was live. [`detach`](alkstore_kit::Lock::detach) lets it run
/// to its deadline on purpose.
pub type RedisLock = alkstore_kit::Lock<Redis>;

/// The future of [`RedisLock::keep_alive`](alkstore_kit::Lock::keep_alive): resolves to the
/// error that ended the renewals.
pub type RedisKeepAlive<'a> = alkstore_kit::KeepAliveFuture<'a>;

/// The future of [`RedisLock::lapsed`](alkstore_kit::Lock::lapsed): resolves to how the
/// lease ended.
pub type RedisLapsed<'a> = alkstore_kit::LapsedFuture<'a>;
