//! `make demo`: why alkstore-mem exists, in about two seconds of real time.
//!
//! Three workers share named jobs through one registry on tokio time. Leases are short, so
//! a worker that stalls loses its job to another, and the fencing token is what lets the
//! protected store refuse the stalled worker's late write. A long job stays alive by renewing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alkstore_mem_tokio::{Clock, LockRegistry, TokioClock};

const LEASE: Duration = Duration::from_millis(300);

/// The resource the locks protect: it remembers the highest fencing token that wrote each
/// key and refuses writes that carry an older one.
#[derive(Default)]
struct FencedStore {
    rows: Mutex<HashMap<String, (String, u64)>>,
}

impl FencedStore {
    fn write(&self, key: &str, value: &str, token: u64) -> Result<(), String> {
        let mut rows = self.rows.lock().unwrap();
        match rows.get(key) {
            Some((_, seen)) if *seen > token => Err(format!(
                "refused: token {token} is older than token {seen} that already wrote {key}"
            )),
            _ => {
                rows.insert(key.to_owned(), (value.to_owned(), token));
                Ok(())
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
        "alkstore-mem demo: named locks with {} ms leases, fencing tokens and renewals\n",
        LEASE.as_millis()
    );

    // worker-1 takes invoice/1001, then stalls (a long GC pause, a frozen VM) past its lease.
    let w1 = {
        let (registry, store, log) = (registry.clone(), store.clone(), log.clone());
        tokio::spawn(async move {
            let mut lock = registry
                .try_lock("invoice/1001", "worker-1", LEASE)
                .unwrap()
                .expect("free");
            log.say(
                "worker-1",
                format!(
                    "locked invoice/1001 with token {}, lease until {} ms",
                    lock.token(),
                    lock.deadline().as_millis()
                ),
            );
            log.say("worker-1", "stalls for 700 ms (think: a long GC pause)...");
            tokio::time::sleep(Duration::from_millis(700)).await;
            log.say(
                "worker-1",
                format!("wakes up; still holding the lease? {}", lock.is_held()),
            );
            match store.write("invoice/1001", "paid by worker-1", lock.token()) {
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
        })
    };

    // worker-2 waits for invoice/1001 and takes it over when worker-1's lease lapses.
    let w2 = {
        let (registry, store, log) = (registry.clone(), store.clone(), log.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            log.say(
                "worker-2",
                "wants invoice/1001: busy, so it waits up to 1 s",
            );
            let lock = registry
                .acquire("invoice/1001", "worker-2", LEASE)
                .timeout(Duration::from_secs(1))
                .await
                .unwrap()
                .expect("granted when worker-1's lease lapses");
            log.say(
                "worker-2",
                format!(
                    "took invoice/1001 over with token {} (worker-1's lease lapsed)",
                    lock.token()
                ),
            );
            store
                .write("invoice/1001", "paid by worker-2", lock.token())
                .unwrap();
            log.say(
                "store",
                format!("accepted worker-2's write with token {}", lock.token()),
            );
            lock.release();
        })
    };

    // worker-3 runs a long report: far longer than one lease, kept alive by renewing.
    let w3 = {
        let (registry, store, log) = (registry.clone(), store.clone(), log.clone());
        tokio::spawn(async move {
            let mut lock = registry
                .try_lock("report/nightly", "worker-3", LEASE)
                .unwrap()
                .expect("free");
            log.say(
                "worker-3",
                format!(
                    "locked report/nightly with token {} for a 1.2 s job",
                    lock.token()
                ),
            );
            for step in 1..=6 {
                tokio::time::sleep(Duration::from_millis(200)).await;
                lock.renew(LEASE).expect("renewed well before the deadline");
                if step % 2 == 0 {
                    log.say(
                        "worker-3",
                        format!(
                            "step {step}/6 done, renewed: lease until {} ms, same token {}",
                            lock.deadline().as_millis(),
                            lock.token()
                        ),
                    );
                }
            }
            store.write("report/nightly", "done", lock.token()).unwrap();
            log.say("worker-3", "report written; releasing");
            assert!(lock.release());
        })
    };

    // Meanwhile someone else keeps trying the report: it stays busy for the whole job.
    let probe = {
        let (registry, log) = (registry.clone(), log.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let busy = registry
                .try_lock("report/nightly", "worker-2", LEASE)
                .unwrap()
                .is_none();
            log.say(
                "worker-2",
                format!("tries report/nightly at 500 ms: busy = {busy} (renewals keep it alive)"),
            );
        })
    };

    for task in [w1, w2, w3, probe] {
        task.await.unwrap();
    }

    println!();
    let rows = store.rows.lock().unwrap();
    let mut keys: Vec<_> = rows.keys().collect();
    keys.sort();
    for key in keys {
        let (value, token) = &rows[key];
        println!("final  {key:<15} = {value:<17} (written with token {token})");
    }
    assert_eq!(
        rows["invoice/1001"].0, "paid by worker-2",
        "the stale write must not win"
    );
}
