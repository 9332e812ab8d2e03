//! The backend: IndexedDB and BroadcastChannel on wasm32 (`js/`), uninhabited stand-ins
//! elsewhere (`host.rs`), so that the crate compiles on the host for docs.rs and
//! rust-analyzer while every call there answers `Unavailable` (no store can be opened).

use alkstore_mem::LockError;

use crate::tx::row::Row;

/// Which rows a transaction reads (the `meta` rows always).
#[derive(Clone, Debug)]
pub(crate) enum Scope {
    /// One name's row.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    Row(String),
    /// Every row (for `snapshot`).
    All,
    /// The `clock` row only (for the test clock).
    #[cfg_attr(not(feature = "test-clock"), allow(dead_code))]
    Meta,
}

/// The rows a body works on, with their names.
pub(crate) type Rows = Vec<(String, Row)>;

/// The engine's clock as a committed transaction read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reading {
    /// The time the transaction decided at (µs on the engine's clock).
    pub(crate) now: u64,
}

/// Why a transaction gave no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TxError {
    /// What the caller sees (always `LockError::Unavailable`).
    pub(crate) error: LockError,
    /// It did not finish within the `io_timeout` (it was aborted, or the database did not
    /// open in time): it changed nothing, and trying again may well succeed.
    pub(crate) timed_out: bool,
}

impl TxError {
    /// A failure that trying again will not cure by itself.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    pub(crate) fn failed(error: LockError) -> Self {
        TxError {
            error,
            timed_out: false,
        }
    }

    /// A transaction (or an open) that ran out of its `io_timeout`.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    pub(crate) fn timed_out(error: LockError) -> Self {
        TxError {
            error,
            timed_out: true,
        }
    }
}

impl From<TxError> for LockError {
    fn from(e: TxError) -> Self {
        e.error
    }
}

/// A transaction's answer: the body's, with the clock it read.
pub(crate) type Answer<R> = Result<(R, Reading), TxError>;

/// What runs once a transaction committed, before its future resolves: it sees the body's
/// answer even when nobody waits for the future any more.
pub(crate) type OnCommit<R> = Box<dyn FnOnce(&R)>;

#[cfg(target_arch = "wasm32")]
pub(crate) use crate::js::{Db, Registration, new_id, open};

#[cfg(not(target_arch = "wasm32"))]
pub(crate) use crate::host::{Db, Registration, new_id, open};
