//! Stand-in for the core's `Fence` (alkstore-mem 0.3), with its API, until it lands: the
//! store side of fencing. It keeps the highest token it has seen and refuses a lower one.

use core::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Keeps the highest fencing token seen; `check` accepts a token at or above it.
#[derive(Debug, Default)]
pub struct Fence {
    /// 0: none yet (the engines never grant token 0).
    highest: AtomicU64,
}

/// A write refused because a newer lease's token has already been seen.
#[derive(Debug)]
pub struct StaleToken {
    pub token: u64,
    pub highest: u64,
}

impl fmt::Display for StaleToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "fencing token {} is older than token {}, already seen",
            self.token, self.highest
        )
    }
}

impl Fence {
    /// Accepts `token` (and records it) unless a higher one was seen before.
    pub fn check(&self, token: u64) -> Result<(), StaleToken> {
        let highest = self.highest.fetch_max(token, Ordering::SeqCst);
        if token < highest {
            Err(StaleToken { token, highest })
        } else {
            Ok(())
        }
    }
}
