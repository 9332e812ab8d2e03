//! [`Config`]: the limits a [`LockRegistry`](crate::LockRegistry) enforces.

/// Limits enforced by a [`LockTable`](crate::LockTable) and the
/// [`LockRegistry`](crate::LockRegistry) around it.
///
/// # Example
/// ```
/// use alkstore_mem::{Config, LockRegistry, ManualClock};
///
/// let config = Config::default().with_max_locks(10_000).with_max_name_len(64);
/// let registry = LockRegistry::with_config(ManualClock::new(), config);
/// assert_eq!(registry.config().max_locks(), Some(10_000));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    max_locks: Option<usize>,
    max_name_len: usize,
    max_owner_len: usize,
}

impl Config {
    /// The default longest name and owner, in bytes.
    pub const DEFAULT_MAX_LEN: usize = 256;

    /// Unlimited live leases, names and owners up to 256 bytes.
    pub const fn new() -> Self {
        Config {
            max_locks: None,
            max_name_len: Self::DEFAULT_MAX_LEN,
            max_owner_len: Self::DEFAULT_MAX_LEN,
        }
    }

    /// At most `max` live leases at once; a `try_lock` of a new name beyond it fails with
    /// [`LockError::CapacityExceeded`](crate::LockError::CapacityExceeded). Lapsed leases do
    /// not count, except one handed to, or waited for by, an
    /// [`acquire`](crate::LockRegistry::acquire) that has not resolved yet: that room is the
    /// waiter's, so that it is granted in place when it comes for the lease. Default:
    /// unlimited.
    #[must_use]
    pub const fn with_max_locks(mut self, max: usize) -> Self {
        self.max_locks = Some(max);
        self
    }

    /// Names longer than `max` bytes are refused with
    /// [`LockError::InvalidName`](crate::LockError::InvalidName). Default: 256.
    #[must_use]
    pub const fn with_max_name_len(mut self, max: usize) -> Self {
        self.max_name_len = max;
        self
    }

    /// Owners longer than `max` bytes are refused with
    /// [`LockError::InvalidOwner`](crate::LockError::InvalidOwner). Default: 256.
    #[must_use]
    pub const fn with_max_owner_len(mut self, max: usize) -> Self {
        self.max_owner_len = max;
        self
    }

    /// The live-lease limit, `None` when unlimited.
    pub const fn max_locks(&self) -> Option<usize> {
        self.max_locks
    }

    /// The longest accepted name, in bytes.
    pub const fn max_name_len(&self) -> usize {
        self.max_name_len
    }

    /// The longest accepted owner, in bytes.
    pub const fn max_owner_len(&self) -> usize {
        self.max_owner_len
    }
}

impl Default for Config {
    fn default() -> Self {
        Self::new()
    }
}
