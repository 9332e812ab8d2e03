//! The connection thread's queue of operations: each a closure run on the store's one
//! connection, in turn.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::db::Db;
use crate::stmts::Statements;

/// A task for the connection thread: the connection, and its kept statements.
pub(crate) type Task = Box<dyn FnOnce(&Db, &Statements<'_>) + Send>;

/// How long the connection thread looks for its next task before it sleeps: a caller's next
/// operation (a `try_lock`'s release, a waiter's next step) usually comes within that, and then
/// costs no futex sleep and wake-up of this thread. Idle, it sleeps as before.
const SPIN: Duration = Duration::from_micros(50);

/// The connection thread's next task (`None` once every sender is gone).
pub(crate) fn next(rx: &mpsc::Receiver<Task>) -> Option<Task> {
    let start = Instant::now();
    loop {
        match rx.try_recv() {
            Ok(task) => return Some(task),
            Err(mpsc::TryRecvError::Disconnected) => return None,
            Err(mpsc::TryRecvError::Empty) if start.elapsed() < SPIN => std::hint::spin_loop(),
            Err(mpsc::TryRecvError::Empty) => return rx.recv().ok(),
        }
    }
}
