//! `Pending`: a future driven in the background, which `cancel()` drops wherever it is
//! (to drop `acquire` and `try_lock` futures at any await point on purpose).

use core::cell::{Cell, RefCell};
use core::future::{Future, poll_fn};
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use std::rc::Rc;

use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

type Local<T> = Pin<Box<dyn Future<Output = T>>>;
/// A driven future's slot: `None` once finished or cancelled.
type Slot = Rc<RefCell<Option<Local<Result<JsValue, JsValue>>>>>;

/// A future driven in the background, which `cancel()` drops wherever it is.
#[wasm_bindgen]
pub struct Pending {
    fut: Slot,
    waker: Rc<Cell<Option<Waker>>>,
    done: Promise,
}

impl core::fmt::Debug for Pending {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Pending").finish_non_exhaustive()
    }
}

impl Pending {
    pub(crate) fn drive(fut: Local<Result<JsValue, JsValue>>) -> Pending {
        let fut = Rc::new(RefCell::new(Some(fut)));
        let waker: Rc<Cell<Option<Waker>>> = Rc::default();
        // The first poll now (sends the first transaction).
        let first = {
            let mut slot = fut.borrow_mut();
            let mut cx = Context::from_waker(Waker::noop());
            match slot.as_mut().map(|f| f.as_mut().poll(&mut cx)) {
                Some(Poll::Ready(out)) => {
                    *slot = None;
                    Some(out)
                }
                _ => None,
            }
        };
        let (f2, w2) = (Rc::clone(&fut), Rc::clone(&waker));
        let done = future_to_promise(async move {
            if let Some(out) = first {
                return out;
            }
            poll_fn(move |cx| {
                w2.set(Some(cx.waker().clone()));
                let mut slot = f2.borrow_mut();
                match slot.as_mut() {
                    None => Poll::Ready(Err(JsValue::from_str("cancelled"))),
                    Some(f) => {
                        let out = f.as_mut().poll(cx);
                        if out.is_ready() {
                            *slot = None;
                        }
                        out
                    }
                }
            })
            .await
        });
        Pending { fut, waker, done }
    }
}

#[wasm_bindgen]
impl Pending {
    /// Resolves with the future's output (rejects with "cancelled" once cancelled).
    #[wasm_bindgen(getter)]
    pub fn done(&self) -> Promise {
        self.done.clone()
    }

    /// Drops the future now, wherever it is; `true` if it was still running.
    pub fn cancel(&self) -> bool {
        let fut = self.fut.borrow_mut().take();
        let was = fut.is_some();
        drop(fut);
        if let Some(w) = self.waker.take() {
            w.wake();
        }
        was
    }
}
