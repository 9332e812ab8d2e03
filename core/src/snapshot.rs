//! [`Snapshot`]: what a registry holds and who waits, for diagnostics.

use alloc::string::String;
use alloc::vec::Vec;

use crate::lease::LeaseInfo;

/// The held leases and queued waiters of a store, as its
/// [`snapshot`](crate::LockStore::snapshot) saw them (what Web Locks' `query()` answers).
/// Build one with `Snapshot::default()` and push to its fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Waiting {
    /// The name it waits for.
    pub name: String,
    /// The owner it asked for the lease as.
    pub owner: String,
}

impl Waiting {
    /// A waiter on `name` for `owner`, as an engine reports it.
    ///
    /// # Example
    /// ```
    /// use alkstore_mem::Waiting;
    ///
    /// let waiting = Waiting::new("invoice/1001", "worker-2");
    /// assert_eq!((waiting.name(), waiting.owner()), ("invoice/1001", "worker-2"));
    /// ```
    pub fn new(name: &str, owner: &str) -> Self {
        Waiting {
            name: name.into(),
            owner: owner.into(),
        }
    }

    /// The name it waits for (as [`LeaseInfo::name`] is for a held lease).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The owner it asked for the lease as (as [`LeaseInfo::owner`] is for a held lease).
    pub fn owner(&self) -> &str {
        &self.owner
    }
}
