//! [`Request`]: a checked lock request, as a waiting `acquire` keeps it.

use core::time::Duration;

use crate::lease::Text;
use crate::table::{LeaseSource, OwnedText};

/// A lock request that passed validation, ready to be granted or queued.
#[derive(Debug)]
pub(crate) struct Request {
    pub(super) text: OwnedText,
    pub(super) hash: u64,
    pub(super) ttl: Duration,
}

impl Request {
    /// A request for `name`, whose hash in the table is `hash`; the inputs are checked.
    pub(crate) fn new(name: &str, owner: &str, hash: u64, ttl: Duration) -> Self {
        Request {
            text: OwnedText {
                text: Text::join(name, owner),
                name_len: name.len(),
            },
            hash,
            ttl,
        }
    }

    pub(crate) fn name(&self) -> &str {
        self.text.name()
    }

    /// The name's hash in the registry's tables.
    pub(crate) fn hash(&self) -> u64 {
        self.hash
    }

    /// The requested lease duration.
    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }
}
