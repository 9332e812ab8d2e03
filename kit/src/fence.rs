//! [`Fencing`]: the hook of an engine that checks a lease inside the user's own transaction
//! (PostgreSQL, SQLite), so that [`Lock::fence`] and [`Locks::fence`] exist on those engines
//! and nowhere else.

use alkstore_mem::LeaseInfo;

use crate::lock::Lock;
use crate::protocol::Protocol;
use crate::store::Locks;

/// An engine that can check a lease inside a transaction of client type `C` (a
/// `tokio_postgres::Transaction`, a `rusqlite::Transaction`, ...).
pub trait Fencing<C: ?Sized>: Protocol {
    /// What the check returns: a future on an async client, a `Result` on a blocking one.
    type Output<'a>
    where
        Self: 'a,
        C: 'a;

    /// Checks that lease `token` on `name` is live now, inside `client`'s transaction, and
    /// keeps any grant of `name` out until that transaction ends.
    fn fence<'a>(&'a self, client: &'a C, name: &'a str, token: u64) -> Self::Output<'a>;
}

/// An engine whose fence is a SQL statement, for those who write their own SQL or triggers.
pub trait FenceSql: Protocol {
    /// The statement, with two parameters: the lock's name and the token.
    fn fence_sql(&self) -> String;
}

impl<P: Protocol> Lock<P> {
    /// Checks this lease inside your transaction, before a write the lock guards: refused
    /// unless the lease is live on the engine's clock now; once it succeeds, nobody can be
    /// granted the name until the transaction ends (see the engine's docs for what that
    /// costs and why it is exact).
    pub fn fence<'a, C: ?Sized>(&'a self, client: &'a C) -> P::Output<'a>
    where
        P: Fencing<C>,
    {
        self.store.engine().fence(client, self.name(), self.token())
    }
}

impl<P: Protocol> Locks<P> {
    /// Checks `lease` inside your transaction (as [`Lock::fence`], for code that holds a
    /// [`LeaseInfo`] rather than the handle, such as a `with_lock` body).
    pub fn fence<'a, C: ?Sized>(&'a self, client: &'a C, lease: &'a LeaseInfo) -> P::Output<'a>
    where
        P: Fencing<C>,
    {
        self.engine().fence(client, lease.name(), lease.token())
    }

    /// The statement that checks a lease in your transaction, with two parameters (the
    /// name and the token), for those who write their own SQL or triggers.
    pub fn fence_sql(&self) -> String
    where
        P: FenceSql,
    {
        self.engine().fence_sql()
    }
}
