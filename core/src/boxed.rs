//! [`BoxedFuture`]: a named future type for engines whose operations are `async` code.

use alloc::boxed::Box;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

/// The future behind a [`BoxedFuture`]: `Send` where threads exist, not on `wasm32`.
#[cfg(not(target_arch = "wasm32"))]
type Inner<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
/// The future behind a [`BoxedFuture`]: `Send` where threads exist, not on `wasm32`.
#[cfg(target_arch = "wasm32")]
type Inner<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// A boxed future with a name: what a remote engine returns where its work is `async` code,
/// so that every future it hands out can be named, stored in a struct field and
/// `select!`ed (engines export aliases such as `RedisKeepAlive<'a>`).
///
/// `Send` on native targets (so `tokio::spawn` takes it), not on `wasm32`, where browser
/// futures hold JavaScript values; `Unpin`. One allocation when it is made, which a round
/// trip to a server dwarfs; the in-memory engine does not use it.
///
/// # Example
/// ```
/// use alkstore_mem::BoxedFuture;
///
/// /// A store that answers after some async work, with a future its users can name.
/// fn answer(x: u32) -> BoxedFuture<'static, u32> {
///     BoxedFuture::new(async move { x + 1 })
/// }
/// assert_eq!(futures_lite::future::block_on(answer(41)), 42);
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct BoxedFuture<'a, T> {
    inner: Inner<'a, T>,
}

impl<'a, T> BoxedFuture<'a, T> {
    /// Boxes `future`.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new(future: impl Future<Output = T> + Send + 'a) -> Self {
        BoxedFuture {
            inner: Box::pin(future),
        }
    }

    /// Boxes `future`.
    #[cfg(target_arch = "wasm32")]
    pub fn new(future: impl Future<Output = T> + 'a) -> Self {
        BoxedFuture {
            inner: Box::pin(future),
        }
    }
}

impl<T> Future for BoxedFuture<'_, T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        self.inner.as_mut().poll(cx)
    }
}

impl<T> fmt::Debug for BoxedFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoxedFuture")
            .field("output", &core::any::type_name::<T>())
            .finish_non_exhaustive()
    }
}
