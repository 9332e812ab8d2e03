//! [`Mutex`]: the one lock the core uses, picked by feature. With `std` (the default) it is
//! `std::sync::Mutex`, which parks a waiting thread instead of spinning (a preempted holder
//! does not burn the other cores' time slices); a poisoned lock is used as it is, since no
//! critical section of the core runs user code or leaves its state half updated. Without
//! `std` it is `spin::Mutex`.

use core::ops::DerefMut;

/// A mutual-exclusion lock with a `lock` that never fails.
#[derive(Default)]
pub(crate) struct Mutex<T>(Inner<T>);

#[cfg(feature = "std")]
type Inner<T> = std::sync::Mutex<T>;
#[cfg(not(feature = "std"))]
type Inner<T> = spin::Mutex<T>;

impl<T> Mutex<T> {
    pub(crate) const fn new(value: T) -> Self {
        Mutex(Inner::new(value))
    }

    /// Locks, waiting as long as it takes; the guard unlocks when dropped.
    #[inline]
    pub(crate) fn lock(&self) -> impl DerefMut<Target = T> + '_ {
        #[cfg(feature = "std")]
        return self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        #[cfg(not(feature = "std"))]
        return self.0.lock();
    }
}
