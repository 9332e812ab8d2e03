//! `make demo`: why alkstore-mem exists, in about two and a half seconds of real time.
//!
//! Three workers share named jobs through one registry on tokio time. Leases are short, so
//! a worker that stalls loses its job to another, and the fencing token is what lets the
//! protected store refuse the stalled worker's late write. A long job keeps its lease with
//! `keep_alive`, raced against its work.
//!
//! The demo checks its outcome, not its timings (`make demo-check` runs it inside
//! `make test`, on machines that may be starved of CPU): the stale write is refused, tokens
//! increase, and every write the store accepted carried the largest token it had seen for
//! that key. What must happen in order is put in order by the code, not by sleeps: the stalled
//! worker wakes only after the takeover has written. The one lease that must survive, the
//! report's, is renewed every 100 ms with a ttl of 1 s: it survives a 900 ms stall of the
//! process, and if it were lost anyway the job would stop and say so rather than write.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alkstore_mem_tokio::{Clock, Fence, LockRegistry, TokioClock};

/// The invoice workers' lease: short, so that a stall loses it.
const LEASE: Duration = Duration::from_millis(300);
/// How long worker-1 stalls (at least; it also outlasts worker-2's takeover).
const STALL: Duration = Duration::from_millis(700);
/// The report's lease, and how often `keep_alive` renews it: 900 ms of slack.
const REPORT_LEASE: Duration = Duration::from_secs(1);
const RENEW_EVERY: Duration = Duration::from_millis(100);
/// The report's work: six steps, 2.4 s in all, far longer than its lease.
const REPORT_STEPS: u32 = 6;
const REPORT_STEP: Duration = Duration::from_millis(400);

/// One write the store was asked for, and its answer.
#[derive(Debug, Clone)]
struct Attempt {
    key: String,
    by: String,
    token: u64,
    accepted: bool,
}

/// The resource the locks protect: each row keeps a [`Fence`], the highest fencing token
/// that wrote it, and refuses writes that carry an older one. It keeps every attempt, for
/// the checks.
#[derive(Default)]
struct FencedStore {
    rows: Mutex<HashMap<String, Row>>,
    attempts: Mutex<Vec<Attempt>>,
}

/// One row of the store: its value, and the fence that guards it.
#[derive(Default)]
struct Row {
    value: String,
    fence: Fence,
}

impl FencedStore {
    fn write(&self, key: &str, by: &str, value: &str, token: u64) -> Result<(), String> {
        // The check and the write under one lock: a stale write cannot slip between them.
        let mut rows = self.rows.lock().unwrap();
        let row = rows.entry(key.to_owned()).or_default();
        let answer = match row.fence.check(token) {
            Ok(()) => {
                row.value = value.to_owned();
                Ok(())
            }
            Err(stale) => Err(format!("refused on {key}: {stale}")),
        };
        self.attempts.lock().unwrap().push(Attempt {
            key: key.to_owned(),
            by: by.to_owned(),
            token,
            accepted: answer.is_ok(),
        });
        answer
    }

    /// Whether the store refused every write `by` attempted, and there was at least one.
    fn all_refused(&self, by: &str) -> bool {
        let attempts = self.attempts.lock().unwrap();
        let mut mine = attempts.iter().filter(|a| a.by == by).peekable();
        mine.peek().is_some() && mine.all(|a| !a.accepted)
    }

    /// The fencing rules, checked over every attempt in the order the store saw them: each
    /// accepted write carried the largest token seen for its key so far, and each refused
    /// one was older than a token that had already written.
    fn check_fencing(&self) {
        let mut largest: HashMap<&str, u64> = HashMap::new();
        let attempts = self.attempts.lock().unwrap();
        for a in attempts.iter() {
            let seen = largest.get(a.key.as_str()).copied();
            if a.accepted {
                assert!(
                    seen.is_none_or(|seen| a.token >= seen),
                    "accepted an older token: {a:?} after token {seen:?}"
                );
                largest.insert(&a.key, a.token);
            } else {
                assert!(
                    seen.is_some_and(|seen| a.token < seen),
                    "refused a write that was not stale: {a:?} (largest {seen:?})"
                );
            }
        }
    }
}

/// Prints one line of the timeline, stamped with the registry's clock.
struct Timeline(TokioClock);

impl Timeline {
    fn say(&self, who: &str, what: impl AsRef<str>) {
        println!(
            "[{:>5} ms] {who:<9} {}",
            self.0.now().as_millis(),
            what.as_ref()
        );
    }
}

#[tokio::main]
async fn main() {
    let clock = TokioClock::new();
    let registry = LockRegistry::new(clock);
    let store = Arc::new(FencedStore::default());
    let log = Arc::new(Timeline(clock));

    println!(
        "alkstore-mem demo: named locks with {} ms leases, fencing tokens and keep-alive\n",
        LEASE.as_millis()
    );

    // worker-1 takes invoice/1001 (here, before anyone else can ask for it).
    let lock_1 = registry
        .try_lock("invoice/1001", "worker-1", LEASE)
        .unwrap()
        .expect("nobody holds invoice/1001 yet");
    let token_1 = lock_1.token();
    log.say(
        "worker-1",
        format!(
            "locked invoice/1001 with token {token_1}, lease until {} ms",
            lock_1.deadline().as_millis()
        ),
    );

    // worker-2 wants invoice/1001 too: it waits, and takes over when worker-1's lease lapses.
    let w2 = {
        let (registry, store, log) = (registry.clone(), store.clone(), log.clone());
        tokio::spawn(async move {
            log.say("worker-2", "wants invoice/1001: waits for it (up to 10 s)");
            let lock = registry
                .acquire("invoice/1001", "worker-2", LEASE)
                .timeout(Duration::from_secs(10))
                .await
                .unwrap()
                .expect("granted when worker-1's lease lapses, 300 ms in");
            log.say(
                "worker-2",
                format!(
                    "took invoice/1001 over with token {} (worker-1's lease lapsed)",
                    lock.token()
                ),
            );
            store
                .write("invoice/1001", "worker-2", "paid by worker-2", lock.token())
                .expect("the largest token for invoice/1001 is accepted");
            log.say(
                "store",
                format!("accepted worker-2's write with token {}", lock.token()),
            );
            let token = lock.token();
            lock.release();
            token
        })
    };

    // worker-1 stalls (a long GC pause, a frozen VM) past its lease, then writes late.
    let w1 = {
        let (store, log) = (store.clone(), log.clone());
        let mut lock = lock_1;
        tokio::spawn(async move {
            log.say(
                "worker-1",
                format!(
                    "stalls for {} ms (think: a long GC pause)...",
                    STALL.as_millis()
                ),
            );
            // The stall also lasts until worker-2 has written, so that on a slow machine
            // too the late write comes after the takeover: the story does not hang on timing.
            let ((), takeover) = tokio::join!(tokio::time::sleep(STALL), w2);
            let token_2 = takeover.unwrap();
            log.say(
                "worker-1",
                format!("wakes up; still holding the lease? {}", lock.is_held()),
            );
            match store.write("invoice/1001", "worker-1", "paid by worker-1", token_1) {
                Ok(()) => log.say("worker-1", "late write ACCEPTED (this would be a bug)"),
                Err(why) => log.say("store", format!("worker-1's late write {why}")),
            }
            if let Err(err) = lock.renew(LEASE) {
                log.say("worker-1", format!("renew fails as it should: {err}"));
            }
            log.say(
                "worker-1",
                format!(
                    "release returns {} (the lease had lapsed; not an error)",
                    lock.release()
                ),
            );
            token_2
        })
    };

    // worker-3 runs a long report, far longer than one lease: keep_alive renews the lease
    // while the work runs, and if the lease were lost the work would stop there.
    let report = registry
        .try_lock("report/nightly", "worker-3", REPORT_LEASE)
        .unwrap()
        .expect("nobody holds report/nightly yet");
    let report_token = report.token();
    log.say(
        "worker-3",
        format!(
            "locked report/nightly with token {report_token} ({} ms lease, renewed every {} ms) for a {} ms job",
            REPORT_LEASE.as_millis(),
            RENEW_EVERY.as_millis(),
            (REPORT_STEP * REPORT_STEPS).as_millis()
        ),
    );
    let w3 = {
        let (store, log) = (store.clone(), log.clone());
        tokio::spawn(async move {
            let work = async {
                for step in 1..=REPORT_STEPS {
                    tokio::time::sleep(REPORT_STEP).await;
                    if step % 2 == 0 {
                        // The work reads the lease keep_alive renews (it borrows it shared).
                        log.say(
                            "worker-3",
                            format!(
                                "step {step}/{REPORT_STEPS} done, lease kept alive until {} ms",
                                report.deadline().as_millis()
                            ),
                        );
                    }
                }
            };
            tokio::select! {
                lost = report.keep_alive(RENEW_EVERY) => {
                    log.say("worker-3", format!("lost the lease, stopping without writing: {lost}"));
                    return false;
                }
                () = work => {}
            }
            log.say(
                "worker-3",
                format!(
                    "job done; lease until {} ms, same token {}",
                    report.deadline().as_millis(),
                    report.token()
                ),
            );
            store
                .write("report/nightly", "worker-3", "done", report.token())
                .expect("the only token that writes report/nightly");
            log.say(
                "worker-3",
                format!("report written; release returns {}", report.release()),
            );
            true
        })
    };

    // Meanwhile someone else tries the report: renewals keep it busy.
    let probe = {
        let (registry, log) = (registry.clone(), log.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1_500)).await;
            match registry
                .try_lock("report/nightly", "worker-2", LEASE)
                .unwrap()
            {
                None => log.say(
                    "worker-2",
                    "tries report/nightly at 1.5 s, past its 1 s lease: busy (keep_alive renews it)",
                ),
                Some(lock) => log.say(
                    "worker-2",
                    format!("tries report/nightly: free, token {}", lock.token()),
                ),
            }
        })
    };

    let token_2 = w1.await.unwrap();
    let report_written = w3.await.unwrap();
    probe.await.unwrap();

    println!();
    {
        let rows = store.rows.lock().unwrap();
        let mut keys: Vec<_> = rows.keys().collect();
        keys.sort();
        for key in keys {
            let row = &rows[key];
            let token = row.fence.highest().expect("written");
            println!(
                "final  {key:<15} = {:<17} (written with token {token})",
                row.value
            );
        }
        assert_eq!(
            rows["invoice/1001"].value, "paid by worker-2",
            "the stale write must not win"
        );
        if report_written {
            assert_eq!(rows["report/nightly"].fence.highest(), Some(report_token));
        }
    }

    // The outcome, whatever the timings were.
    assert!(
        store.all_refused("worker-1"),
        "the store refused worker-1's stale write"
    );
    assert!(token_2 > token_1, "the takeover carries a larger token");
    store.check_fencing();
    assert_eq!(registry.snapshot().held.len(), 0, "every lease ended");
    if !report_written {
        println!("(the report's lease was lost on this run: the machine stalled for over 900 ms)");
    }
}
