//! The calls of [`IdbLocks`] that list every lock: [`snapshot`](IdbLocks::snapshot) (the
//! contract's order: by name) and [`query`](IdbLocks::query) (Web Locks' order: held in grant
//! order, waiting in request order). One transaction over every row, twice when a context
//! the rows name turns out dead.

use alkstore_mem::{LeaseInfo, Snapshot, Waiting};

use crate::store::IdbLocks;
use crate::sys::Scope;
use crate::tx::ops;
use crate::util::stamp;
use crate::{BoxedFuture, IdbFuture};

/// What one snapshot transaction saw: the live leases, the live waiters with their number in
/// the request order (0 for a ticket written before tickets were numbered), and the context
/// ids the rows record.
type Seen = (Vec<LeaseInfo>, Vec<(u64, Waiting)>, Vec<String>);

/// The listing's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    /// By name; each name's waiters in the order they will be served.
    ByName,
    /// Held by token (grant order), waiting by request order.
    ByTime,
}

impl IdbLocks {
    /// The operator's view: every live lease (sorted by name) and every live waiter (by name,
    /// then in the order they will be served), across every context sharing the database.
    /// One transaction over all rows; it settles each (a lapsed lease goes to its first
    /// waiter, as any operation on that name would do), so what it shows is what the next
    /// operation would find. [`query`](Self::query) lists the same in time order.
    ///
    /// # Errors
    /// [`LockError::Unavailable`](crate::LockError::Unavailable) when the transaction fails
    /// or times out.
    ///
    /// # Example
    /// ```no_run
    /// # async fn run(locks: alkstore_idb::IdbLocks) -> Result<(), alkstore_idb::LockError> {
    /// let snapshot = locks.snapshot().await?;
    /// for lease in &snapshot.held {
    ///     println!("{} held by {} (token {})", lease.name(), lease.owner(), lease.token());
    /// }
    /// for waiter in &snapshot.waiting {
    ///     println!("{} waits for {}", waiter.owner, waiter.name);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn snapshot(&self) -> IdbFuture<'static, Snapshot> {
        self.list(Order::ByName)
    }

    /// The same as [`snapshot`](Self::snapshot), in the order of Web Locks'
    /// `navigator.locks.query()`: `held` in grant order (by fencing token), `waiting` in
    /// **request order** across every name, the order in which the requests joined their
    /// queues.
    ///
    /// That order is the order in which IndexedDB ran the requests' first transactions (it
    /// runs them one at a time across the origin): for requests made in one context, the
    /// order of the calls; across contexts, a request made after another context's request
    /// showed up in a `query` comes after it (requests made at about the same time in two
    /// contexts are ordered as IndexedDB received them). Each name's waiters are in the order
    /// they will be served, as in `snapshot`. A waiter that came back after its ticket was
    /// dropped (its context looked dead) counts from its return.
    ///
    /// # Errors
    /// [`LockError::Unavailable`](crate::LockError::Unavailable) when the transaction fails
    /// or times out.
    ///
    /// # Example
    /// ```no_run
    /// # async fn run(locks: alkstore_idb::IdbLocks) -> Result<(), alkstore_idb::LockError> {
    /// let now = locks.query().await?;
    /// if let Some(first) = now.waiting.first() {
    ///     println!("the oldest request waiting: {} for {}", first.owner(), first.name());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn query(&self) -> IdbFuture<'static, Snapshot> {
        self.list(Order::ByTime)
    }

    fn list(&self, order: Order) -> IdbFuture<'static, Snapshot> {
        let store = self.clone();
        BoxedFuture::new(async move {
            let (mut held, mut waiting, contexts) = store.snapshot_tx().await?;
            if store.inner.db.confirm_dead(contexts).await {
                // A context in it is dead: its leases and tickets are over; look again.
                (held, waiting, _) = store.snapshot_tx().await?;
            }
            // Stable sorts: each name's waiters keep their queue order.
            match order {
                // By name as Rust orders strings (IndexedDB orders keys by UTF-16 code units).
                Order::ByName => {
                    held.sort_by(|a, b| a.name().cmp(b.name()));
                    waiting.sort_by(|a, b| a.1.name.cmp(&b.1.name));
                }
                Order::ByTime => {
                    held.sort_by_key(LeaseInfo::token);
                    waiting.sort_by_key(|w| w.0);
                }
            }
            let mut snapshot = Snapshot::default();
            snapshot.held = held;
            snapshot.waiting = waiting.into_iter().map(|w| w.1).collect();
            Ok(snapshot)
        })
    }

    /// One snapshot transaction (see [`Seen`]).
    async fn snapshot_tx(&self) -> Result<Seen, crate::LockError> {
        let tx = self.inner.db.transact(Scope::All, |rows, cx| {
            let mut held = Vec::new();
            let mut waiting = Vec::new();
            let mut contexts: Vec<String> = Vec::new();
            for (name, row) in rows.iter_mut() {
                ops::settle(row, cx);
                if let Some(l) = &row.lease {
                    held.push(LeaseInfo::new(name, &l.owner, l.token, stamp(l.deadline)));
                }
                for ticket in ops::waiting(row, cx) {
                    waiting.push((ticket.seq, Waiting::new(name, &ticket.owner)));
                }
                for ctx in ops::contexts(row) {
                    if !contexts.iter().any(|c| c == ctx) {
                        contexts.push(ctx.into());
                    }
                }
            }
            (held, waiting, contexts)
        });
        Ok(tx.await?.0)
    }
}
