//! Dropping a [`PgLock`] releases it: in a task on the current runtime, or on a helper thread
//! with a connection of its own when there is no runtime or it is shutting down.

use crate::lock::{PgLock, release};
use crate::store::PgLocks;

impl Drop for PgLock {
    fn drop(&mut self) {
        if !self.release_on_drop {
            return;
        }
        let job = DropRelease {
            store: self.store.clone(),
            name: std::mem::take(&mut self.name),
            token: self.token,
            done: false,
        };
        match tokio::runtime::Handle::try_current() {
            // A task on the current runtime, on the store's pool. If the runtime shuts down
            // before the task ends, the task is dropped and `DropRelease` finishes the job.
            Ok(runtime) => {
                runtime.spawn(async move {
                    let mut job = job;
                    // Best effort: if the server cannot be reached, the lease lapses.
                    let _ = release(&job.store, &job.name, job.token).await;
                    job.done = true;
                });
            }
            Err(_) => drop(job),
        }
    }
}

/// The release of a dropped [`PgLock`]. Dropped before it ran to the end (its task was
/// cancelled by a runtime shutting down, or there was no runtime), it releases on a helper
/// thread with a current-thread runtime and a connection of its own, within the
/// `io_timeout`, and waits for that thread.
struct DropRelease {
    store: PgLocks,
    name: String,
    token: u64,
    done: bool,
}

impl Drop for DropRelease {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let config = self.store.inner.pool.config().clone();
        let sql = format!("SELECT {}.release($1, $2)", self.store.inner.schema.ident);
        let io = self.store.inner.config.io_timeout();
        let name = std::mem::take(&mut self.name);
        let token = i64::try_from(self.token).unwrap_or(i64::MAX);
        let helper = std::thread::Builder::new()
            .name("alkstore-pg-release".into())
            .spawn(move || {
                let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                runtime.block_on(async move {
                    let release = async {
                        let (client, connection) = config.connect(tokio_postgres::NoTls).await?;
                        let driver = tokio::spawn(connection);
                        let result = client.execute(&sql, &[&name, &token]).await;
                        drop(client);
                        let _ = driver.await;
                        result
                    };
                    let _ = tokio::time::timeout(io, release).await;
                });
            });
        if let Ok(helper) = helper {
            let _ = helper.join();
        }
    }
}
