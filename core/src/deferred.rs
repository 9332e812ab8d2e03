//! [`Deferred`]: the work a shard's critical section leaves for after its mutex is
//! released (waking and dropping wakers, freeing text), so that no user code runs under it.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::task::Waker;

use crate::wake::wake_all;

/// Work kept for after the mutex is released: wakers to wake, wakers to drop (replaced or
/// removed ones: dropping a waker runs user code) and a freed lease text, so that none of it
/// runs inside the critical section. Allocation free unless a waiter is involved.
#[derive(Default)]
pub(crate) struct Deferred {
    wake: Vec<Waker>,
    discard: Vec<Waker>,
    freed: Option<Arc<str>>,
}

impl Deferred {
    pub(crate) fn wake(&mut self, waker: Option<Waker>) {
        self.wake.extend(waker);
    }

    pub(crate) fn discard(&mut self, waker: Option<Waker>) {
        self.discard.extend(waker);
    }

    pub(crate) fn free(&mut self, text: Option<Arc<str>>) {
        // At most one text per operation in practice; a second is simply dropped here.
        if self.freed.is_none() {
            self.freed = text;
        }
    }

    /// Wakes the collected wakers (every one, even if one panics), then drops the discarded
    /// wakers and the freed text. When there is none of that (no waiter was involved, no
    /// long text freed: the common case) it is two compares, inlined into the caller.
    #[inline]
    pub(crate) fn run(self) {
        if self.wake.capacity() == 0 && self.discard.capacity() == 0 && self.freed.is_none() {
            // Nothing to wake and nothing owned: skip the drop glue too.
            core::mem::forget(self);
            return;
        }
        self.run_work();
    }

    #[cold]
    #[inline(never)]
    fn run_work(self) {
        let Deferred {
            wake,
            discard,
            freed,
        } = self;
        // Dropped after the wake-ups, also when a wake-up panics.
        let _later = (freed, discard);
        if !wake.is_empty() {
            wake_all(wake);
        }
    }
}
