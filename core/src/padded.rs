//! [`CachePadded`]: keeps contended data on cache lines of its own.

/// Aligns (and so pads) its content to a 64-byte cache line, so that data written by one
/// core does not share a line with data another core uses.
#[derive(Default)]
#[repr(align(64))]
pub(crate) struct CachePadded<T>(pub(crate) T);

impl<T> core::ops::Deref for CachePadded<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}
