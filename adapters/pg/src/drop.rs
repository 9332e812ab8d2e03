//! Dropping a [`PgLock`] releases it: in a task on the current runtime, or on a helper thread
//! with a connection of its own when there is no runtime or it is shutting down (see
//! [`Cleanup`]).

use crate::cleanup::Cleanup;
use crate::lock::PgLock;

impl Drop for PgLock {
    fn drop(&mut self) {
        if self.release_on_drop {
            Cleanup::release(&self.store, &self.name, self.token).launch();
        }
    }
}
