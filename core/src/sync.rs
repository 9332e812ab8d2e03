//! [`Mutex`]: the one lock the core uses, picked by feature. With `std` (the default) it is
//! `std::sync::Mutex`, which parks a waiting thread instead of spinning (a preempted holder
//! does not burn the other cores' time slices); a poisoned lock is used as it is, since no
//! critical section of the core runs user code or leaves its state half updated. Without
//! `std`, and on wasm without threads (where no lock is ever contended, so parking buys
//! nothing and std's lock only adds code to the `.wasm`), it is `spin::Mutex`.

use core::ops::DerefMut;

/// A mutual-exclusion lock with a `lock` that never fails.
#[derive(Default)]
pub(crate) struct Mutex<T>(Inner<T>);

#[cfg(all(
    feature = "std",
    not(all(target_family = "wasm", not(target_feature = "atomics")))
))]
type Inner<T> = std::sync::Mutex<T>;
#[cfg(not(all(
    feature = "std",
    not(all(target_family = "wasm", not(target_feature = "atomics")))
)))]
type Inner<T> = spin::Mutex<T>;

impl<T> Mutex<T> {
    pub(crate) const fn new(value: T) -> Self {
        Mutex(Inner::new(value))
    }

    /// Locks, waiting as long as it takes; the guard unlocks when dropped.
    #[inline]
    pub(crate) fn lock(&self) -> impl DerefMut<Target = T> + '_ {
        #[cfg(all(
            feature = "std",
            not(all(target_family = "wasm", not(target_feature = "atomics")))
        ))]
        return self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        #[cfg(not(all(
            feature = "std",
            not(all(target_family = "wasm", not(target_feature = "atomics")))
        )))]
        return self.0.lock();
    }
}
