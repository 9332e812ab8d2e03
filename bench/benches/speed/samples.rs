//! The samples of a run: each benchmark's ns/op, kept by id, and their medians.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// ns/op of every sample, by benchmark id.
static SAMPLES: Mutex<BTreeMap<String, Vec<f64>>> = Mutex::new(BTreeMap::new());

/// Runs `iters` operations with `op(i)`, records ns/op under `id`, returns the elapsed time.
pub fn timed(id: &str, iters: u64, mut op: impl FnMut(usize)) -> Duration {
    let start = Instant::now();
    for i in 0..iters as usize {
        op(i);
    }
    let elapsed = start.elapsed();
    record(id, iters, elapsed);
    elapsed
}

pub fn record(id: &str, iters: u64, elapsed: Duration) {
    let ns = elapsed.as_nanos() as f64 / iters.max(1) as f64;
    SAMPLES
        .lock()
        .unwrap()
        .entry(id.to_owned())
        .or_default()
        .push(ns);
}

pub fn median(id: &str) -> Option<f64> {
    let samples = SAMPLES.lock().unwrap();
    let mut v = samples.get(id)?.clone();
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}
