//! The commands, written once against the contract ([`LockStore`]'s `snapshot`, `holder`
//! and `force_release`) and an [`EngineClock`]: they run unchanged on every engine.

use std::future::Future;

use alkstore_mem::{LockError, LockStore, Timestamp};

use crate::args::Command;
use crate::render;

/// The clock an engine's deadlines are on (a server's clock for a remote engine), read to
/// show how long each lease has left. Deadlines the tool prints as UTC are nanoseconds since
/// the Unix epoch on this clock.
pub(crate) trait EngineClock {
    /// The engine's time now.
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the engine does not answer.
    fn now(&self) -> impl Future<Output = Result<Timestamp, LockError>>;
}

/// What a command printed, and whether it found what it was asked about.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Answer {
    /// The output, ending with a newline.
    pub(crate) text: String,
    /// `holder`/`release` of a name with no live lease: exit code 1.
    pub(crate) not_held: bool,
}

/// Why a command could not run: a usage error (exit 2) or an engine that could not answer
/// (exit 3). The message is one line, without the URL's secrets.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The command line asks for something the tool cannot do.
    Usage(String),
    /// The engine could not be reached or did not answer.
    Unavailable(String),
}

impl From<LockError> for Failure {
    fn from(error: LockError) -> Self {
        // The commands refuse nothing else (names are checked when parsed): whatever the
        // engine answers with is its failure to answer.
        Failure::Unavailable(error.to_string())
    }
}

/// Runs `command` against `store`, with `clock` for the time left; `json` for JSON output.
///
/// # Errors
/// [`Failure::Unavailable`] when the engine does not answer.
pub(crate) async fn run<S: LockStore, C: EngineClock>(
    store: &S,
    clock: &C,
    command: &Command,
    json: bool,
) -> Result<Answer, Failure> {
    match command {
        Command::List => {
            let snapshot = store.snapshot().await?;
            let now = clock.now().await?;
            let text = if json {
                render::list_json(&snapshot, now)
            } else {
                render::list_table(&snapshot, now)
            };
            Ok(Answer {
                text,
                not_held: false,
            })
        }
        Command::Holder(name) => {
            let lease = store.holder(name).await?;
            let now = clock.now().await?;
            let text = if json {
                render::lease_json("held", lease.as_ref(), now)
            } else {
                render::holder_text(name, lease.as_ref(), now)
            };
            Ok(Answer {
                text,
                not_held: lease.is_none(),
            })
        }
        Command::Release(name) => {
            let ended = store.force_release(name).await?;
            let now = clock.now().await?;
            let text = if json {
                render::lease_json("released", ended.as_ref(), now)
            } else {
                render::release_text(name, ended.as_ref(), now)
            };
            Ok(Answer {
                text,
                not_held: ended.is_none(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alkstore_mem::{LockHandle, LockRegistry, ManualClock};
    use futures_lite::future::block_on;
    use std::time::Duration;

    /// The in-memory engine's clock, as an [`EngineClock`].
    struct Manual(ManualClock);

    impl EngineClock for Manual {
        async fn now(&self) -> Result<Timestamp, LockError> {
            Ok(alkstore_mem::Clock::now(&self.0))
        }
    }

    #[test]
    fn commands_run_on_any_engine_here_the_in_memory_one() {
        let clock = ManualClock::new();
        clock.set(Timestamp::from_millis(1_000));
        let registry = LockRegistry::new(clock.clone());
        let engine = Manual(clock.clone());
        let run = |command, json| block_on(run(&registry, &engine, &command, json)).unwrap();

        let mut lock = registry
            .try_lock("job", "worker-1", Duration::from_secs(30))
            .unwrap()
            .unwrap();
        let waiter = registry
            .acquire("job", "worker-2", Duration::from_secs(30))
            .timeout(Duration::from_secs(60));
        let mut waiter = Box::pin(waiter);
        assert!(block_on(futures_lite::future::poll_once(&mut waiter)).is_none());

        let list = run(Command::List, false);
        assert!(!list.not_held);
        assert!(
            list.text
                .contains("job   worker-1  1      1970-01-01T00:00:31.000Z  30.0s"),
            "{}",
            list.text
        );
        assert!(
            list.text.contains("job          worker-2  1"),
            "{}",
            list.text
        );

        let holder = run(Command::Holder("job".into()), true);
        assert_eq!(
            holder.text,
            "{\"now\":\"1970-01-01T00:00:01.000000000Z\",\"held\":{\"name\":\"job\",\"owner\":\"worker-1\",\"token\":1,\"deadline\":\"1970-01-01T00:00:31.000000000Z\",\"left_ms\":30000}}\n"
        );
        assert!(run(Command::Holder("free".into()), false).not_held);

        let released = run(Command::Release("job".into()), false);
        assert!(!released.not_held);
        assert!(
            released
                .text
                .starts_with("released job held by worker-1 (fencing token 1); it had 30.0s left"),
            "{}",
            released.text
        );
        let renewed = block_on(LockHandle::renew(&mut lock, Duration::from_secs(1)));
        assert!(
            matches!(renewed, Err(LockError::Expired { .. })),
            "{renewed:?}"
        );
        let handed = block_on(waiter).unwrap().unwrap();
        assert!(handed.token() > 1, "the next grant has a larger token");
        let again = run(Command::Release("free".into()), true);
        assert!(again.not_held);
        assert_eq!(
            again.text,
            "{\"now\":\"1970-01-01T00:00:01.000000000Z\",\"released\":null}\n"
        );
    }
}
