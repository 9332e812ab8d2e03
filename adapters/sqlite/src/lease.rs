//! [`Lease`]: a lease row as the operations read it (a type of its own, so that the
//! transaction that reads rows and the queue rules that use them do not import each other).

/// A lease row.
#[derive(Clone, Debug)]
pub(crate) struct Lease {
    pub(crate) owner: Option<String>,
    pub(crate) token: i64,
    pub(crate) deadline: i64,
    pub(crate) req: Option<String>,
    pub(crate) claimed: bool,
}
