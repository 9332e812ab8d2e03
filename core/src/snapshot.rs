//! [`Snapshot`]: what a registry holds and who waits, for diagnostics.

use alloc::string::String;
use alloc::vec::Vec;

use crate::lease::LeaseInfo;

/// The held leases and queued waiters of a [`LockRegistry`](crate::LockRegistry), as
/// [`LockRegistry::snapshot`](crate::LockRegistry::snapshot) saw them (Web Locks `query()`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Snapshot {
    /// Every live lease, sorted by name.
    pub held: Vec<LeaseInfo>,
    /// Every queued [`acquire`](crate::LockRegistry::acquire), sorted by name and, within a
    /// name, in the order they will be served.
    pub waiting: Vec<Waiting>,
}

/// One queued [`acquire`](crate::LockRegistry::acquire) call in a [`Snapshot`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Waiting {
    /// The name it waits for.
    pub name: String,
    /// The owner it asked for the lease as.
    pub owner: String,
}
