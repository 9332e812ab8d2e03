//! The three worker processes. Each connects to Redis on its own and talks to the coordinator
//! (the invoice store) over its pipes: one line per event out, one answer per write in.

use std::fmt::Display;
use std::time::Duration;

use alkstore_mem::{LockError, Timestamp};
use alkstore_redis::{RedisConfig, RedisLocks};

use crate::{IO_TIMEOUT, JOB_STEP, JOB_STEPS, LEASE, NAME, RENEW_EVERY, STALL, since};

/// One worker process: its name, its own connection, and the demo's start (ms since the epoch).
pub struct Worker {
    who: String,
    locks: RedisLocks,
    start_ms: u64,
}

impl Worker {
    pub async fn connect(who: &str, url: &str, ns: &str, start_ms: u64) -> Worker {
        let config = RedisConfig::new()
            .with_namespace(ns)
            .with_io_timeout(IO_TIMEOUT);
        let locks = RedisLocks::connect_with(url, config)
            .await
            .expect("the demo's Redis answers");
        Worker {
            who: format!("worker-{who}"),
            locks,
            start_ms,
        }
    }

    /// Tells the coordinator: `<ms>\t<kind>\t<token>\t<text>`.
    fn emit(&self, kind: &str, token: u64, text: impl Display) {
        println!("{}\t{kind}\t{token}\t{text}", since(self.start_ms));
    }

    fn note(&self, text: impl Display) {
        self.emit("note", 0, text);
    }

    /// A deadline on the server's clock, in ms since the demo's start (one machine, one clock).
    fn at(&self, deadline: Timestamp) -> u64 {
        deadline.as_millis().saturating_sub(self.start_ms)
    }

    /// Asks the invoice store to write `value` under `token`; its answer.
    async fn write(&self, token: u64, value: &str) -> Result<(), String> {
        self.emit("write", token, value);
        let answer = read_line().await;
        match answer.strip_prefix("refused ") {
            None if answer == "ok" => Ok(()),
            None => panic!("the store answered {answer:?}"),
            Some(why) => Err(why.to_owned()),
        }
    }

    pub async fn run(&self) {
        match self.who.as_str() {
            "worker-a" => self.stalls().await,
            "worker-b" => self.takes_over().await,
            _ => self.is_handed_the_lease().await,
        }
    }

    /// worker-a: locks the invoice, writes a draft, stalls past its lease, then tries to write
    /// again with its old token.
    async fn stalls(&self) {
        let mut lock = self
            .locks
            .try_lock(NAME, &self.who, LEASE)
            .await
            .unwrap()
            .expect("nobody holds invoice/1001 yet");
        let token = lock.token();
        self.emit(
            "holds",
            token,
            format_args!(
                "locked {NAME} with token {token}, lease until {} ms",
                self.at(lock.deadline())
            ),
        );
        self.write(token, "draft (worker-a)")
            .await
            .expect("the first token is accepted");
        self.note(format_args!(
            "stalls for {} ms (think: a long GC pause)...",
            STALL.as_millis()
        ));
        // The stall also lasts until worker-b's takeover has written (the coordinator says
        // "go"), so that on a slow machine too the late write comes after it.
        tokio::join!(tokio::time::sleep(STALL), read_line());
        let held = lock.is_held().await.unwrap();
        self.note(format_args!("wakes up; still holding the lease? {held}"));
        // The store answers (and the coordinator prints it): refused.
        let _ = self.write(token, "paid (worker-a)").await;
        match lock.renew(LEASE).await {
            Err(err @ LockError::Expired { .. }) => {
                self.note(format_args!("renew fails as it should: {err}"));
            }
            other => panic!("renewing a lapsed lease: {other:?}"),
        }
        let released = lock.release().await.unwrap();
        self.note(format_args!(
            "release returns {released} (the lease had lapsed; not an error)"
        ));
    }

    /// worker-b: waits first in line, gets the lease when worker-a's lapses, writes, and
    /// releases, which hands the lease to worker-c.
    async fn takes_over(&self) {
        self.emit(
            "asking",
            0,
            format_args!("wants {NAME}: waits in line (up to 10 s)"),
        );
        let lock = self
            .locks
            .acquire(NAME, &self.who, LEASE)
            .timeout(Duration::from_secs(10))
            .await
            .unwrap()
            .expect("granted when worker-a's lease lapses");
        let token = lock.token();
        self.emit(
            "holds",
            token,
            format_args!(
                "took {NAME} over with token {token} (worker-a's lease lapsed on the \
                 server's clock; worker-b was first in line)"
            ),
        );
        self.write(token, "approved (worker-b)")
            .await
            .expect("the largest token yet is accepted");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(lock.release().await.unwrap());
        self.note("releases it: the release hands the lease straight to the next in line");
    }

    /// worker-c: waits behind worker-b, is handed the lease by its release, and runs a job
    /// longer than its lease, kept alive by `keep_alive` while the job reads the lease's
    /// deadline; writes only if the lease held.
    async fn is_handed_the_lease(&self) {
        self.emit(
            "asking",
            0,
            format_args!("wants {NAME} too: waits in line behind worker-b"),
        );
        let lock = self
            .locks
            .acquire(NAME, &self.who, LEASE)
            .timeout(Duration::from_secs(10))
            .await
            .unwrap()
            .expect("handed over by worker-b's release");
        let token = lock.token();
        self.emit(
            "holds",
            token,
            format_args!(
                "was handed {NAME} by that release, with token {token}, lease until {} ms; \
                 starts the payment: {} ms of work, kept alive every {} ms",
                self.at(lock.deadline()),
                (JOB_STEP * JOB_STEPS).as_millis(),
                RENEW_EVERY.as_millis()
            ),
        );
        // The work reads the lease while keep_alive renews it (keep_alive takes `&self`).
        let work = async {
            for step in 1..=JOB_STEPS {
                tokio::time::sleep(JOB_STEP).await;
                if step % 2 == 0 {
                    self.note(format_args!(
                        "payment step {step}/{JOB_STEPS} done; lease until {} ms (renewed), token {}",
                        self.at(lock.deadline()),
                        lock.token()
                    ));
                }
            }
        };
        let finished = tokio::select! {
            lost = lock.keep_alive(RENEW_EVERY) => {
                self.emit("lost", token, format_args!("lost the lease, stops without writing: {lost}"));
                false
            }
            () = work => true,
        };
        if finished {
            self.write(token, "paid (worker-c)")
                .await
                .expect("the largest token yet is accepted");
        }
        assert!(lock.release().await.unwrap());
        self.note(format_args!("releases it; {NAME} is free"));
    }
}

/// One line from the coordinator (without its newline); empty when it closed the pipe.
async fn read_line() -> String {
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
        line.trim_end().to_owned()
    })
    .await
    .unwrap()
}
