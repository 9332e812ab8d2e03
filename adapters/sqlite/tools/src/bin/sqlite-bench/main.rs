//! `make bench-sqlite`: try_lock + release on the SQLite engine against, in the same run and
//! on the same kind of file (WAL, the same `synchronous` setting):
//! - a hand-rolled lease row ([`row`]): `INSERT .. ON CONFLICT DO UPDATE .. WHERE deadline <
//!   now RETURNING token` in `BEGIN IMMEDIATE`, then a compare-and-free `UPDATE`, called
//!   directly on a connection (no thread hop, no async, no FIFO, no fencing, no clock floor);
//! - the same row called from async code through `spawn_blocking`, as an async program would;
//! - `flock` on a file (the floor: no ttl, no token, no queue);
//!
//! for `synchronous = NORMAL` (the engine's default) and `FULL`: the variants take turns in
//! rounds ([`variants`]); each figure is the median over the rounds, each ratio the median of
//! the ratios within a round. Then what does not depend on the machine's load
//! ([`counts`]: instructions and system calls per cycle), and what needs several processes
//! ([`procs`]: 4 contending, wake-up latency, takeover after `kill -9`, idle CPU). Prints;
//! asserts nothing about speed. Knobs: `BENCH_N` (cycles per variant, default 3000; FULL
//! runs a tenth), `BENCH_ROUNDS` (10), `BENCH_COUNTS=0` (skip the counts), `IDLE_SECS` (20),
//! `BENCH_ONLY=procs` (only the multi-process part).

mod counts;
mod procs;
mod row;
mod variants;

use std::path::Path;
use std::time::Duration;

use variants::{BLOCKING, ENGINE, FLOCK, NAMES, ROW, median};

/// The ttl of every lease the bench takes.
pub const TTL: Duration = Duration::from_secs(30);

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs a child's part (`contend`, `waiter`, `holder`, `cycles`); `false` if none is asked.
fn child(runtime: &tokio::runtime::Runtime, args: &[String]) -> bool {
    let arg = |i: usize| args[i].parse::<u64>().unwrap();
    let path = || Path::new(&args[2]);
    match args.get(1).map(String::as_str) {
        Some("waiter") => runtime.block_on(procs::waiter(path(), &args[3], arg(4))),
        Some("holder") => runtime.block_on(procs::holder(path(), arg(3))),
        Some("contend") => {
            let (id, names, cycles) = (arg(3) as usize, arg(4) as usize, arg(5) as u32);
            runtime.block_on(procs::contender(path(), id, names, cycles));
        }
        Some("cycles") => runtime.block_on(async {
            let mut v = variants::Variants::open(path(), &args[4]).await;
            let variant = arg(3) as usize;
            v.run(variant, 20).await;
            v.run(variant, arg(5) as u32).await;
        }),
        _ => return false,
    }
    true
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    if child(&runtime, &args) {
        return;
    }
    let n = env("BENCH_N", 3000) as u32;
    let scratch = alkstore_sqlite_tools::Scratch::new("bench");
    let dir = &scratch.0;
    // BENCH_ONLY=procs: only what needs several processes (wake-up, takeover, idle CPU).
    if std::env::var("BENCH_ONLY").as_deref() == Ok("procs") {
        procs_section(&runtime, dir, n);
        return;
    }
    let rounds = env("BENCH_ROUNDS", 10) as usize;
    println!("## try_lock + release, µs per cycle");
    println!();
    println!("WAL, each variant on a file of its own; the variants take turns in {rounds} rounds,");
    println!("in a rotating order, so that other load on the machine and the disk hit all alike;");
    println!("each figure is the median over the rounds, each ratio (alkstore-sqlite / the other)");
    println!("the median of the ratios measured within one round.");
    println!();
    println!(
        "| synchronous | cycles per round | {} | {} | ratio | {} | ratio | {} | {} | ratio |",
        NAMES[0], NAMES[2], NAMES[3], NAMES[1], NAMES[4]
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for sync in ["NORMAL", "FULL"] {
        let per_round = if sync == "FULL" { n / 10 } else { n } / rounds as u32;
        let times = runtime.block_on(variants::rounds(dir, sync, per_round.max(1), rounds));
        let med = |i: usize| median(&mut times.iter().map(|t| t[i]).collect::<Vec<_>>());
        let ratio =
            |i: usize| median(&mut times.iter().map(|t| t[ENGINE] / t[i]).collect::<Vec<_>>());
        println!(
            "| {sync} | {per_round} | {:.1} | {:.1} | {:.2}x | {:.1} | {:.2}x | {:.1} | {:.2} | {:.0}x |",
            med(ENGINE),
            med(ROW),
            ratio(ROW),
            med(BLOCKING),
            ratio(BLOCKING),
            med(1),
            med(FLOCK),
            ratio(FLOCK),
        );
    }
    println!();
    counts_section(dir);
    procs_section(&runtime, dir, n);
}

/// Instructions and system calls per cycle: independent of the machine's load.
fn counts_section(dir: &Path) {
    if env("BENCH_COUNTS", 1) == 0 {
        println!("(counts skipped: BENCH_COUNTS=0)");
        println!();
        return;
    }
    println!("## per cycle, independent of the load (runs of 2100 minus runs of 100 cycles)");
    println!();
    let shown = [ENGINE, ROW, BLOCKING];
    if counts::have("valgrind") {
        let ir: Vec<Option<f64>> = shown
            .iter()
            .map(|&v| counts::instructions_per_cycle(dir, v, "NORMAL"))
            .collect();
        print!("instructions (callgrind Ir, every thread, NORMAL; alkstore-sqlite / it):");
        for (&v, one) in shown.iter().zip(&ir) {
            match (one, ir[0]) {
                (Some(x), Some(ours)) if v != ENGINE => {
                    print!(" {} {x:.0} ({:.2}x);", NAMES[v], ours / x);
                }
                (Some(x), _) => print!(" {} {x:.0};", NAMES[v]),
                _ => print!(" {} (failed);", NAMES[v]),
            }
        }
        println!();
    } else {
        println!("instructions: valgrind is not installed (apt-get install valgrind), skipped");
    }
    if counts::have("strace") {
        for sync in ["NORMAL", "FULL"] {
            print!("system calls (strace -f, {sync}): ");
            for &v in &shown {
                match counts::syscalls_per_cycle(dir, v, sync) {
                    Some((all, syncs)) => {
                        print!(" {} {all:.1} ({syncs:.1} fsync/fdatasync);", NAMES[v]);
                    }
                    None => print!(" {} (failed);", NAMES[v]),
                }
            }
            println!();
        }
    } else {
        println!("system calls: strace is not installed, skipped");
    }
    println!();
}

/// 4 processes contending, wake-up latency, takeover after `kill -9`, idle CPU.
fn procs_section(runtime: &tokio::runtime::Runtime, dir: &Path, n: u32) {
    let cycles = n / 10;
    let one = procs::contended(&dir.join("contend-1.db"), 1, cycles);
    let four = procs::contended(&dir.join("contend-4.db"), 4, cycles);
    println!(
        "## 4 processes contending, {cycles} acquire + release each (FIFO hand-off between processes)"
    );
    println!();
    println!("| names | µs per lease | leases/s |");
    println!("|---|---|---|");
    println!("| 1 | {one:.1} | {:.0} |", 1e6 / one);
    println!("| 4 | {four:.1} | {:.0} |", 1e6 / four);
    println!();
    println!("## across processes");
    println!();
    let (median, min, max) = runtime.block_on(procs::wakeup_latency(&dir.join("wakeup.db"), 50));
    println!(
        "- wake-up: a release in this process -> the waiter in another process granted: median \
         {median:?} (min {min:?}, max {max:?}, 50 rounds; the release's own transaction included; \
         target ≤ 2 ms median)"
    );
    let ms = 300;
    let (median, min, max) = runtime.block_on(procs::takeover(&dir.join("takeover.db"), ms, 10));
    println!(
        "- kill -9 of a holder ({ms} ms lease): the head waiter in another process granted after \
         the dead lease's deadline by: median {median:?} (min {min:?}, max {max:?}, 10 rounds; \
         target ≤ 50 ms)"
    );
    let secs = env("IDLE_SECS", 20);
    let cpu = runtime.block_on(procs::idle_cpu(&dir.join("idle.db"), secs));
    println!(
        "- idle: a process waiting behind a lease held for an hour (default config: 1 s heartbeat): \
         {cpu:.3}% of a core over {secs} s (/proc/self/stat; target < 1%)"
    );
}
