//! The core's own uses of [`events`](crate::events), on its `LeaseInfo`s. Every event is
//! emitted after the shard's lock is released (a subscriber is user code).

use crate::error::LockError;
use crate::events;
use crate::lease::LeaseInfo;

/// How a lease was granted.
#[derive(Clone, Copy, Debug)]
pub(crate) enum How {
    /// By `try_lock` (or an `acquire` on a free name).
    Directly,
    /// Handed to a waiting `acquire` by a release or a lapse.
    HandedOff,
}

/// A lease was granted.
#[inline(always)]
pub(crate) fn granted(lease: &LeaseInfo, how: How) {
    let handed_off = matches!(how, How::HandedOff);
    events::granted(
        lease.name(),
        lease.owner(),
        lease.token(),
        lease.deadline(),
        handed_off,
    );
}

/// A renewal was refused (the lease was lost, or the ttl was refused).
#[inline(always)]
pub(crate) fn renew_refused(lease: &LeaseInfo, error: &LockError) {
    events::renew_refused(lease.name(), lease.owner(), lease.token(), error);
}

/// A holder's `lapsed()` or `keep_alive` found its lease gone.
#[inline(always)]
pub(crate) fn lapse_seen(lease: &LeaseInfo, how: &LockError) {
    events::lease_lost(lease.name(), lease.token(), how);
}

/// An operator force-released a lease.
#[inline(always)]
pub(crate) fn force_released(lease: &LeaseInfo) {
    events::force_released(lease);
}
