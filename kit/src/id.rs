//! Request ids: process-unique and unguessable, so that a request's retry, its withdrawal
//! and its wake-up message all find it.

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};

/// A new id: 16 hex digits of a random hash, the process id, and a counter.
///
/// # Example
/// ```
/// let (a, b) = (alkstore_kit::new_id(), alkstore_kit::new_id());
/// assert_ne!(a, b);
/// assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
/// ```
pub fn new_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let random = RandomState::new().hash_one(n);
    // Written digit by digit: `format!` cost more than the rest of a call's own work.
    let mut id = Vec::with_capacity(40);
    push_hex(&mut id, random, 16);
    // The process id: a forked child starts from its parent's random state and counter.
    push_hex(&mut id, u64::from(std::process::id()), 8);
    push_hex(&mut id, n, 1);
    // Hex digits only: always UTF-8.
    String::from_utf8(id).unwrap_or_default()
}

/// Appends `value` in lowercase hex, with at least `width` digits (zeros in front), as
/// `{value:0width$x}` does.
fn push_hex(out: &mut Vec<u8>, value: u64, width: u32) {
    let digits = (u64::BITS - value.leading_zeros()).div_ceil(4).max(width);
    for shift in (0..digits).rev() {
        let nibble = (value >> (shift * 4)) & 0xf;
        out.push(b"0123456789abcdef"[nibble as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_digits_as_format_writes_them() {
        for value in [
            0,
            1,
            0xf,
            0x10,
            0xabc,
            u64::from(u32::MAX),
            1 << 63,
            u64::MAX,
        ] {
            for width in [1, 8, 16] {
                let mut ours = Vec::new();
                push_hex(&mut ours, value, width);
                assert_eq!(ours, format!("{value:0w$x}", w = width as usize).as_bytes());
            }
        }
    }

    #[test]
    fn ids_have_the_documented_shape_and_differ() {
        let (a, b) = (new_id(), new_id());
        assert_ne!(a, b);
        let pid = format!("{:08x}", std::process::id());
        assert_eq!(&a[16..24], pid, "{a}");
        let (na, nb) = (
            u64::from_str_radix(&a[24..], 16).unwrap(),
            u64::from_str_radix(&b[24..], 16).unwrap(),
        );
        assert!(nb > na, "{a} {b}");
    }
}
