//! What the tool serves, read by the parser and the engines alike: the URL schemes it opens
//! and the longest names and owners it handles.

/// Every scheme the tool serves, as the usage text and the error for any other list them.
pub(crate) const SCHEMES: &[&str] = &[
    "redis://",
    "redis+unix://",
    "rediss://",
    "postgres://",
    "postgresql://",
    "sqlite://",
];

/// The longest name and owner the tool handles: 64 KiB, far above the core's 256-byte default,
/// which an application may have raised (the tool must reach every name `list` shows).
pub(crate) const MAX_LEN: usize = 64 * 1024;

/// The limits the tool opens every engine with: [`MAX_LEN`] for names and owners; the other
/// checks (empty, control characters, the reserved prefix) are the core's, which no engine
/// ever let through.
pub(crate) fn limits() -> alkstore_mem::Config {
    alkstore_mem::Config::new()
        .with_max_name_len(MAX_LEN)
        .with_max_owner_len(MAX_LEN)
}
