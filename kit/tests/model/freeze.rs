//! A frozen model, as a server stopped with SIGSTOP: requests sent meanwhile are held (they
//! are in its socket) and run when it thaws, whether or not anybody still waits for their
//! answers, and in the worst order: the last sent first, as requests that came in on several
//! connections may be served. Its clients may give up on their answers before that (as a
//! client library's own response timeout does), without taking the requests back.

use std::time::Duration;

use tokio::sync::oneshot;

use alkstore_mem::LockError;

use super::state::State;
use super::{Model, frozen};

/// A held request: runs on the table, answers its caller (if still there), and says whom to
/// wake.
type Held = Box<dyn FnOnce(&mut State) -> Vec<String> + Send>;

/// Whether the model is frozen, and the requests it holds.
#[derive(Default)]
pub(super) struct Freezer {
    frozen: bool,
    held: Vec<Held>,
    /// How long a caller waits for an answer while frozen (`None`: until the thaw).
    answer_within: Option<Duration>,
}

impl Model {
    /// Freezes the model: requests are held until [`thaw`](Self::thaw); a caller gets no
    /// answer before then, or `Unavailable` after `answer_within` (as a client library's own
    /// response timeout gives), the request still held.
    pub fn freeze(&self, answer_within: Option<Duration>) {
        let mut f = self.freezer.lock().unwrap();
        f.frozen = true;
        f.answer_within = answer_within;
    }

    /// Thaws the model: the held requests run, the last sent first.
    pub fn thaw(&self) {
        let held = {
            let mut f = self.freezer.lock().unwrap();
            f.frozen = false;
            std::mem::take(&mut f.held)
        };
        for request in held.into_iter().rev() {
            let woke = request(&mut self.state());
            self.ring(woke);
        }
    }

    /// How many requests the frozen model holds.
    pub fn held(&self) -> usize {
        self.freezer.lock().unwrap().held.len()
    }

    /// Runs `op` on the table (after the call's delay) and wakes whom it says, or, frozen,
    /// holds it until the thaw.
    pub(super) async fn exec<T: Send + 'static>(
        &self,
        op: impl FnOnce(&mut State) -> (T, Vec<String>) + Send + 'static,
    ) -> Result<T, LockError> {
        self.arrive().await;
        let (answer, within) = {
            let mut f = self.freezer.lock().unwrap();
            if !f.frozen {
                drop(f);
                let (value, woke) = op(&mut self.state());
                self.ring(woke);
                return Ok(value);
            }
            let (tx, rx) = oneshot::channel();
            f.held.push(Box::new(move |s: &mut State| {
                let (value, woke) = op(s);
                let _ = tx.send(value);
                woke
            }));
            (rx, f.answer_within)
        };
        match within {
            None => answer.await.map_err(|_| frozen()),
            Some(within) => match tokio::time::timeout(within, answer).await {
                Ok(answer) => answer.map_err(|_| frozen()),
                Err(_) => Err(frozen()),
            },
        }
    }
}
