//! [`Slot`]: one entry of a [`LockTable`](super::LockTable).

use crate::lease::Text;
use crate::time::Timestamp;

/// The deadline of a slot ended early (kept for a waiter): lapsed at every reading.
pub(super) const LAPSED: Timestamp = Timestamp::ZERO;

/// One entry of the table: 56 bytes, its `name\0owner` text included when that is short
/// (up to 30 bytes), and the name's hash, so that growing, shrinking and sweeping the table
/// never hash a name again.
pub(super) struct Slot {
    pub(super) text: Text,
    pub(super) hash: u64,
    pub(super) token: u64,
    pub(super) deadline: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_56_bytes_with_its_short_text_inline() {
        // 57 bytes a bucket with its control byte: what keeps the heap per live lease
        // within budget at hashbrown's lowest load factor after a resize.
        assert_eq!(core::mem::size_of::<Slot>(), 56);
    }
}
