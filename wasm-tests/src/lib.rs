//! The alkstore-mem conformance suite lives in `tests/`: each file runs natively under
//! `cargo test` and in headless Chromium under `wasm-bindgen-test`. This library holds the
//! helpers those files share.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use alkstore_mem::{LockRegistry, ManualClock};

/// A registry on a fresh [`ManualClock`], and a clone of that clock to move time with.
pub fn manual_registry() -> (LockRegistry<ManualClock>, ManualClock) {
    let clock = ManualClock::new();
    (LockRegistry::new(clock.clone()), clock)
}

/// Waits `millis` of real time in the browser, on a `setTimeout` promise.
#[cfg(target_arch = "wasm32")]
pub async fn browser_sleep(millis: i32) {
    use wasm_bindgen::prelude::*;

    #[wasm_bindgen]
    extern "C" {
        #[wasm_bindgen(js_name = setTimeout)]
        fn set_timeout(handler: &js_sys::Function, millis: i32) -> JsValue;
    }

    let promise = js_sys::Promise::new(&mut |resolve, _reject| {
        set_timeout(&resolve, millis);
    });
    wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .expect("a setTimeout promise never rejects");
}

/// Polls a future by hand with a waker that counts its wake-ups, so a test can check both
/// what a future answers and whether it was woken when it should have been.
pub struct Probe<F: Future> {
    future: Pin<Box<F>>,
    wakes: Arc<WakeCounter>,
}

struct WakeCounter(AtomicUsize);

impl Wake for WakeCounter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl<F: Future> Probe<F> {
    /// Wraps `future`; nothing is polled yet.
    pub fn new(future: F) -> Self {
        Probe {
            future: Box::pin(future),
            wakes: Arc::new(WakeCounter(AtomicUsize::new(0))),
        }
    }

    /// Polls once.
    pub fn poll(&mut self) -> Poll<F::Output> {
        let waker = Waker::from(Arc::clone(&self.wakes));
        self.future.as_mut().poll(&mut Context::from_waker(&waker))
    }

    /// Polls once and expects `Pending`.
    #[track_caller]
    pub fn pending(&mut self) {
        assert!(
            self.poll().is_pending(),
            "expected the future to be pending"
        );
    }

    /// Polls once and expects `Ready`, returning the output.
    #[track_caller]
    pub fn ready(&mut self) -> F::Output {
        match self.poll() {
            Poll::Ready(output) => output,
            Poll::Pending => panic!("expected the future to be ready"),
        }
    }

    /// How many times the future's waker was woken so far.
    pub fn wakes(&self) -> usize {
        self.wakes.0.load(Ordering::SeqCst)
    }
}
