//! The failover figures (`make failover-redis`; a short run in `make test-redis`): a
//! Sentinel set of its own on loopback (a master, a replica, three sentinels; base port 6455
//! shifted by `ALKSTORE_TEST_PORT_OFFSET`), worker processes (this binary again) taking,
//! renewing and releasing leases on three names through `redis+sentinel://`, and failovers
//! one after another, by `SENTINEL FAILOVER` and by SIGKILL of the master in turn; without
//! and with `with_replica_ack(1, 500 ms)`. Prints, per mode, the double grants, token
//! inversions, leases lost, waiters stranded, calls refused, how long until the sentinels
//! named the new master and how long grants paused; exits non-zero if a token went back, a
//! waiter was stranded, or a name was granted twice with the replica ack on.
//!
//! `failover [--failovers N] [--processes N] [--modes plain,ack]` (defaults 10, 8, both).

mod worker;

use std::path::PathBuf;
use std::process::{Child, Command, ExitCode};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use alkstore_redis_tools::failover::Figures;
use alkstore_redis_tools::sentinels::SentinelSet;

/// The set's first port (before the offset): 6455-6459.
const BASE: u16 = 6455;
/// Steady running before the first failover and after each.
const STEADY: Duration = Duration::from_secs(3);

fn now_us() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_micros()).unwrap_or(u64::MAX)
}

fn env(key: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| panic!("the parent sets {key}"))
}

struct Args {
    failovers: usize,
    processes: u64,
    modes: Vec<bool>,
}

fn args() -> Result<Args, String> {
    let mut parsed = Args {
        failovers: 10,
        processes: 8,
        modes: vec![false, true],
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--failovers" => parsed.failovers = value()?.parse().map_err(|e| format!("{e}"))?,
            "--processes" => parsed.processes = value()?.parse().map_err(|e| format!("{e}"))?,
            "--modes" => {
                parsed.modes = value()?
                    .split(',')
                    .map(|m| match m {
                        "plain" => Ok(false),
                        "ack" => Ok(true),
                        _ => Err(format!("unknown mode {m:?} (plain, ack)")),
                    })
                    .collect::<Result<_, _>>()?;
            }
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    Ok(parsed)
}

/// One failover: when it started, how long until the sentinels named the new master, and how.
struct Failover {
    at_us: u64,
    took: Duration,
    kind: &'static str,
}

/// One mode's run: its figures and failovers.
struct Run {
    ack: bool,
    figures: Figures,
    failovers: Vec<Failover>,
    steady_pause_us: u64,
}

fn spawn_worker(
    url: &str,
    ns: &str,
    paths: (&str, &str),
    index: u64,
    ack: bool,
    until: u64,
) -> Child {
    Command::new(std::env::current_exe().expect("this binary"))
        .env("ALKSTORE_FAILOVER_WORKER", index.to_string())
        .env("ALKSTORE_FAILOVER_URL", url)
        .env("ALKSTORE_FAILOVER_NS", ns)
        .env("ALKSTORE_FAILOVER_LOG", paths.0)
        .env("ALKSTORE_FAILOVER_STOP", paths.1)
        .env("ALKSTORE_FAILOVER_ACK", if ack { "1" } else { "0" })
        .env("ALKSTORE_FAILOVER_UNTIL", until.to_string())
        .spawn()
        .expect("a worker process starts")
}

/// The worker processes: told to stop (the stop file) and killed if they linger, also when
/// the run fails half-way.
struct Workers {
    children: Vec<Child>,
    stop: PathBuf,
}

impl Workers {
    /// Tells them to stop and waits for them; how many failed.
    fn finish(&mut self) -> usize {
        let _ = std::fs::File::create(&self.stop);
        let limit = worker::WAIT + Duration::from_secs(30);
        self.children
            .drain(..)
            .map(|mut c| finish(&mut c, limit))
            .filter(|ok| !ok)
            .count()
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        let _ = std::fs::File::create(&self.stop);
        for child in &mut self.children {
            finish(child, Duration::from_secs(10));
        }
    }
}

/// Waits for `child` (up to `limit`, then kills it, by its own handle); whether it succeeded.
fn finish(child: &mut Child, limit: Duration) -> bool {
    let start = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return status.success();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn run_mode(set: &mut SentinelSet, ack: bool, args: &Args) -> Result<Run, String> {
    let mode = if ack { "ack" } else { "plain" };
    let dir = std::env::temp_dir().join(format!("alkstore-failover-{}-{mode}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (log, stop): (PathBuf, PathBuf) = (dir.join("events.log"), dir.join("stop"));
    std::fs::File::create(&log).map_err(|e| e.to_string())?;
    let ns = format!("failover_{mode}_{}", std::process::id());
    let (log_s, stop_s) = (log.display().to_string(), stop.display().to_string());
    let url = set.url();
    // However the run goes, no worker outlives this bound (two minutes per failover, and
    // some): each stops by itself then.
    let until = now_us() / 1_000_000 + 120 * (args.failovers as u64 + 2);
    let mut workers = Workers {
        children: (0..args.processes)
            .map(|i| spawn_worker(&url, &ns, (&log_s, &stop_s), i, ack, until))
            .collect(),
        stop: stop.clone(),
    };
    let steady_from = now_us();
    std::thread::sleep(STEADY);
    let mut failovers = Vec::new();
    for k in 0..args.failovers {
        let at_us = now_us();
        let ((_, took), kind) = if k % 2 == 0 {
            (set.failover_by_command(), "SENTINEL FAILOVER")
        } else {
            (set.failover_by_kill(), "SIGKILL")
        };
        eprintln!(
            "{mode}: failover {} ({kind}): the sentinels named the new master after {took:?}",
            k + 1
        );
        failovers.push(Failover { at_us, took, kind });
        std::thread::sleep(STEADY);
    }
    let failed = workers.finish();
    let text = std::fs::read_to_string(&log).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&dir);
    if failed > 0 {
        return Err(format!("{mode}: {failed} worker process(es) failed"));
    }
    let figures = Figures::read(&text)?;
    let first = failovers.first().map_or(u64::MAX, |f| f.at_us);
    let steady_pause_us = figures
        .pause_after(steady_from + 1_000_000, first)
        .unwrap_or(0);
    Ok(Run {
        ack,
        figures,
        failovers,
        steady_pause_us,
    })
}

fn ms(us: u64) -> String {
    format!("{:.0} ms", us as f64 / 1000.0)
}

fn median_max(mut values: Vec<u64>) -> String {
    values.sort_unstable();
    match (values.get(values.len() / 2), values.last()) {
        (Some(median), Some(max)) => format!("{} / {}", ms(*median), ms(*max)),
        _ => "-".into(),
    }
}

fn report(runs: &[Run], args: &Args) {
    println!(
        "\n{} processes on 3 names (ttl 3 s, holds 20-200 ms with a renewal, io_timeout 5 s), \
         failovers alternating SENTINEL FAILOVER and SIGKILL of the master:\n",
        args.processes
    );
    println!(
        "| replica ack | failovers | grants | double grants | token inversions | leases lost | \
         waiters stranded | calls refused | sentinels named the new master after (median / max) | \
         grants paused, SENTINEL FAILOVER (median / max) | grants paused, SIGKILL (median / max) | \
         longest pause, steady |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for run in runs {
        let f = &run.figures;
        let named = run
            .failovers
            .iter()
            .map(|x| x.took.as_micros() as u64)
            .collect();
        let pauses = |kind: &str| -> Vec<u64> {
            run.failovers
                .iter()
                .enumerate()
                .filter(|(_, x)| x.kind == kind)
                .filter_map(|(i, x)| {
                    let next = run.failovers.get(i + 1).map_or(u64::MAX, |n| n.at_us);
                    let until = x.at_us + x.took.as_micros() as u64 + 10_000_000;
                    f.pause_after(x.at_us, until.min(next))
                })
                .collect()
        };
        let kinds = run.failovers.iter().filter(|x| x.kind == "SIGKILL").count();
        println!(
            "| {} | {} ({} by command, {kinds} by SIGKILL) | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            if run.ack { "1 replica, 500 ms" } else { "off" },
            run.failovers.len(),
            run.failovers.len() - kinds,
            f.grants,
            f.double_grants,
            f.inversions,
            f.lost,
            f.stranded,
            f.refused,
            median_max(named),
            median_max(pauses("SENTINEL FAILOVER")),
            median_max(pauses("SIGKILL")),
            ms(run.steady_pause_us),
        );
    }
    for run in runs {
        for (name, earlier, later) in &run.figures.doubles {
            // The failover the second grant came after.
            let after = run
                .failovers
                .iter()
                .rev()
                .find(|x| x.at_us <= later.grant_us);
            let what = after.map_or("before any failover".into(), |x| {
                format!(
                    "{} ms after a {} began",
                    (later.grant_us - x.at_us) / 1000,
                    x.kind
                )
            });
            println!(
                "double grant (replica ack {}): {name} token {} (granted at {} µs, used until {} µs)                  and token {} (granted at {} µs, {what})",
                if run.ack { "on" } else { "off" },
                earlier.token,
                earlier.grant_us,
                earlier.end_us,
                later.token,
                later.grant_us,
            );
        }
    }
}

fn main() -> ExitCode {
    if let Ok(index) = std::env::var("ALKSTORE_FAILOVER_WORKER") {
        let job = worker::Job {
            url: env("ALKSTORE_FAILOVER_URL"),
            namespace: env("ALKSTORE_FAILOVER_NS"),
            log: env("ALKSTORE_FAILOVER_LOG"),
            stop: env("ALKSTORE_FAILOVER_STOP"),
            index: index.parse().expect("a worker index"),
            ack: env("ALKSTORE_FAILOVER_ACK") == "1",
            until_secs: env("ALKSTORE_FAILOVER_UNTIL").parse().expect("a time"),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        runtime.block_on(worker::run(job));
        return ExitCode::SUCCESS;
    }
    let args = match args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("failover: {e}");
            return ExitCode::from(2);
        }
    };
    let mut set = SentinelSet::start(BASE);
    let mut runs = Vec::new();
    for &ack in &args.modes {
        match run_mode(&mut set, ack, &args) {
            Ok(run) => runs.push(run),
            Err(e) => {
                eprintln!("failover: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    report(&runs, &args);
    let mut ok = true;
    for run in &runs {
        let f = &run.figures;
        let mode = if run.ack {
            "with replica ack"
        } else {
            "without replica ack"
        };
        if f.inversions > 0 || f.stranded > 0 || (run.ack && f.double_grants > 0) {
            eprintln!("failover: {mode}: {f}: a rule is broken");
            ok = false;
        }
        if f.grants == 0 {
            eprintln!("failover: {mode}: no grant at all");
            ok = false;
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
