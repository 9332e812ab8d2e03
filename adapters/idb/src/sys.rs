//! The backend: IndexedDB and BroadcastChannel on wasm32 (`js/`), uninhabited stand-ins
//! elsewhere (`host.rs`), so that the crate compiles on the host for docs.rs and
//! rust-analyzer while every call there answers `Unavailable` (no store can be opened).

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
    /// The test clock's offset it saw (0 outside test builds).
    pub(crate) offset: u64,
}

#[cfg(target_arch = "wasm32")]
pub(crate) use crate::js::{Db, date_now_us, new_id, open};

#[cfg(not(target_arch = "wasm32"))]
pub(crate) use crate::host::{Db, date_now_us, new_id, open};
