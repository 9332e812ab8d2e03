//! Counts that do not depend on the machine's load: CPU instructions per cycle (callgrind)
//! and system calls per cycle (strace), each the difference between a run of `n2` and one
//! of `n1` cycles of one variant in a child process, divided by `n2 - n1` (so that start-up
//! and warm-up cancel out). Skipped, and said so, when the tool is not installed.

use std::path::Path;
use std::process::{Command, Stdio};

/// The short runs: `n1` and `n2` cycles.
const N1: u32 = 100;
const N2: u32 = 2100;

/// Whether `tool` runs here.
pub fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The child's command line after the tool's own arguments.
fn child(dir: &Path, variant: usize, sync: &str, n: u32) -> Vec<String> {
    vec![
        std::env::current_exe().unwrap().display().to_string(),
        "cycles".into(),
        dir.display().to_string(),
        variant.to_string(),
        sync.into(),
        n.to_string(),
    ]
}

/// Instructions (callgrind's `Ir`, every thread) of `n` cycles plus start-up.
fn instructions(dir: &Path, variant: usize, sync: &str, n: u32) -> Option<u64> {
    let out = dir.join(format!("callgrind.{variant}.{sync}.{n}"));
    let status = Command::new("valgrind")
        .args(["--tool=callgrind", "-q"])
        .arg(format!("--callgrind-out-file={}", out.display()))
        .args(child(dir, variant, sync, n))
        .stdout(Stdio::null())
        .status()
        .ok()?;
    if !status.success() {
        return None;
    }
    let text = std::fs::read_to_string(&out).ok()?;
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.trim().split(' ').next()?.parse().ok())
}

/// Instructions per cycle of `variant`.
pub fn instructions_per_cycle(dir: &Path, variant: usize, sync: &str) -> Option<f64> {
    let (a, b) = (
        instructions(dir, variant, sync, N1)?,
        instructions(dir, variant, sync, N2)?,
    );
    Some((b as f64 - a as f64) / f64::from(N2 - N1))
}

/// System calls (every thread) of `n` cycles plus start-up: all, and the `fsync`s and
/// `fdatasync`s among them.
fn syscalls(dir: &Path, variant: usize, sync: &str, n: u32) -> Option<(u64, u64)> {
    let out = dir.join(format!("strace.{variant}.{sync}.{n}"));
    let status = Command::new("strace")
        .args(["-f", "-c", "-o"])
        .arg(&out)
        .args(child(dir, variant, sync, n))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    if !status.success() {
        return None;
    }
    let text = std::fs::read_to_string(&out).ok()?;
    let (mut all, mut syncs) = (None, 0);
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(calls), Some(name)) = (f.get(3).and_then(|c| c.parse::<u64>().ok()), f.last())
        else {
            continue;
        };
        match *name {
            "total" => all = Some(calls),
            "fsync" | "fdatasync" => syncs += calls,
            _ => {}
        }
    }
    Some((all?, syncs))
}

/// System calls per cycle of `variant`: all, and fsyncs.
pub fn syscalls_per_cycle(dir: &Path, variant: usize, sync: &str) -> Option<(f64, f64)> {
    let (a, b) = (
        syscalls(dir, variant, sync, N1)?,
        syscalls(dir, variant, sync, N2)?,
    );
    let per = |x: u64, y: u64| (y as f64 - x as f64) / f64::from(N2 - N1);
    Some((per(a.0, b.0), per(a.1, b.1)))
}
