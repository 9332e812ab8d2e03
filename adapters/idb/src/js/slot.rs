//! [`Slot`]: a one-shot slot a JavaScript callback fills and a future waits on.

use core::cell::{Cell, RefCell};
use core::task::{Context, Poll, Waker};
use std::rc::Rc;

/// A one-shot slot a JavaScript callback fills and a future waits on.
pub(crate) struct Slot<T> {
    value: RefCell<Option<T>>,
    waker: Cell<Option<Waker>>,
}

impl<T> Slot<T> {
    pub(crate) fn new() -> Rc<Self> {
        Rc::new(Slot {
            value: RefCell::new(None),
            waker: Cell::new(None),
        })
    }

    pub(crate) fn fill(&self, value: T) {
        let mut slot = self.value.borrow_mut();
        if slot.is_none() {
            *slot = Some(value);
        }
        drop(slot);
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }

    pub(crate) fn poll(&self, cx: &mut Context<'_>) -> Poll<T> {
        match self.value.borrow_mut().take() {
            Some(value) => Poll::Ready(value),
            None => {
                self.waker.set(Some(cx.waker().clone()));
                Poll::Pending
            }
        }
    }
}
