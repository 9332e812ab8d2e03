//! The variants measured side by side: the engine (through the kit, and its protocol called
//! directly), the hand-rolled row (direct and through `spawn_blocking`), and `flock`.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use alkstore_kit::Protocol;
use alkstore_sqlite::{Sqlite, SqliteConfig, SqliteLocks, Synchronous};

use crate::TTL;
use crate::row::Row;

/// The variants, in the order of [`Variants::run`]'s `variant` argument.
pub const NAMES: [&str; 5] = [
    "alkstore-sqlite",
    "engine without the kit",
    "hand-rolled row (direct)",
    "hand-rolled row (spawn_blocking)",
    "flock",
];
/// Index of the engine through the kit.
pub const ENGINE: usize = 0;
/// Index of the hand-rolled row called directly.
pub const ROW: usize = 2;
/// Index of the hand-rolled row through `spawn_blocking`.
pub const BLOCKING: usize = 3;
/// Index of `flock`.
pub const FLOCK: usize = 4;

/// The `synchronous` setting by its SQL name.
pub fn sync_of(name: &str) -> Synchronous {
    match name {
        "FULL" => Synchronous::Full,
        _ => Synchronous::Normal,
    }
}

/// Every variant, each on a file of its own in one directory, opened once.
pub struct Variants {
    engine: SqliteLocks,
    protocol: Sqlite,
    row: Row,
    blocking: Arc<Mutex<Row>>,
    flock: std::fs::File,
}

impl Variants {
    /// Opens them all in `dir` with `synchronous = sync` (`NORMAL` or `FULL`).
    pub async fn open(dir: &Path, sync: &str) -> Variants {
        let config = SqliteConfig::new().with_synchronous(sync_of(sync));
        let file = |what: &str| dir.join(format!("{what}-{sync}.db"));
        Variants {
            engine: alkstore_sqlite::open_with(file("engine"), config.clone())
                .await
                .unwrap(),
            protocol: Sqlite::open(file("protocol"), config).await.unwrap(),
            row: Row::open(&file("row"), sync),
            blocking: Arc::new(Mutex::new(Row::open(&file("rowb"), sync))),
            flock: std::fs::File::create(dir.join(format!("flock-{sync}"))).unwrap(),
        }
    }

    /// `n` cycles of try_lock + release on variant `variant`; µs per cycle.
    pub async fn run(&mut self, variant: usize, n: u32) -> f64 {
        let t = Instant::now();
        match variant {
            0 => {
                for _ in 0..n {
                    let lock = self.engine.try_lock("bench", "me", TTL).await.unwrap();
                    assert!(lock.unwrap().release().await.unwrap());
                }
            }
            1 => {
                let p = &self.protocol;
                for _ in 0..n {
                    let reply = p.try_lock("bench", "me", TTL, "r").await.unwrap();
                    let token = reply.value.unwrap().token;
                    assert!(p.release("bench", token, "r").await.unwrap());
                }
            }
            2 => {
                for _ in 0..n {
                    let token = self.row.try_lock("bench", "me").unwrap();
                    assert!(self.row.release("bench", token));
                }
            }
            3 => {
                for _ in 0..n {
                    let r = Arc::clone(&self.blocking);
                    let token = tokio::task::spawn_blocking(move || {
                        r.lock().unwrap().try_lock("bench", "me")
                    })
                    .await
                    .unwrap()
                    .unwrap();
                    let r = Arc::clone(&self.blocking);
                    let released = tokio::task::spawn_blocking(move || {
                        r.lock().unwrap().release("bench", token)
                    })
                    .await
                    .unwrap();
                    assert!(released);
                }
            }
            _ => {
                for _ in 0..n {
                    self.flock.try_lock().unwrap();
                    self.flock.unlock().unwrap();
                }
            }
        }
        t.elapsed().as_secs_f64() * 1e6 / f64::from(n)
    }
}

/// The median of `values` (sorted in place).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// `rounds` rounds of `n` cycles of every variant, in an order that rotates from round to
/// round (with `FULL`, the first one after the others' fsyncs is measurably luckier), after
/// a warm-up; µs per cycle of each variant in each round.
pub async fn rounds(dir: &Path, sync: &str, n: u32, rounds: usize) -> Vec<[f64; 5]> {
    let mut v = Variants::open(dir, sync).await;
    for variant in 0..NAMES.len() {
        v.run(variant, (n / 5).max(1)).await;
    }
    let mut out = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let mut times = [0.0; 5];
        for k in 0..NAMES.len() {
            let variant = (round + k) % NAMES.len();
            times[variant] = v.run(variant, n).await;
        }
        out.push(times);
    }
    out
}
