//! What the speed and memory benchmarks share: which build this is, and their report rows,
//! printed as a Markdown table and written as JSON under the repository's `target/` for
//! `bench/summary.py`, which puts the workspace and downstream builds side by side.

use std::fmt::Write as _;
use std::path::PathBuf;

/// The workspace's own build (`alkstore-mem-bench`: release, thin LTO, one codegen unit) or
/// the downstream crate's (`bench/downstream`: release, no LTO, default codegen units).
pub fn build() -> &'static str {
    if env!("CARGO_PKG_NAME") == "alkstore-mem-bench" {
        "workspace"
    } else {
        "downstream"
    }
}

/// How this build was compiled, for the report's heading.
pub fn profile() -> &'static str {
    match build() {
        "workspace" => "workspace profile: release, thin LTO, 1 codegen unit",
        _ => "downstream crate: release, no LTO, default codegen units, core by path",
    }
}

/// The repository's `target/`, whichever crate this benchmark was built in.
pub fn out_dir() -> PathBuf {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest
        .ancestors()
        .find(|dir| dir.join("core/Cargo.toml").is_file())
        .unwrap_or(manifest);
    let dir = root.join("target");
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// One line of a report.
#[derive(Debug, Clone, Default)]
pub struct Row {
    /// Stable key, for joining builds in the summary.
    pub key: String,
    /// What was measured.
    pub label: String,
    /// The measured value, in `unit`.
    pub value: f64,
    /// `ns/op`, `B/lease`, `allocs/op`.
    pub unit: &'static str,
    /// The ratio that matters for this row, spelled out (`1.62x floor`), or empty.
    pub ratio: String,
    /// The target, spelled out, or empty.
    pub target: String,
    /// Whether the target is met; `None` when the row has no target.
    pub met: Option<bool>,
}

impl Row {
    /// A row with a value and no ratio or target.
    pub fn new(key: &str, label: &str, value: f64, unit: &'static str) -> Self {
        Row {
            key: key.into(),
            label: label.into(),
            value,
            unit,
            ..Row::default()
        }
    }

    /// Adds the ratio text.
    pub fn ratio(mut self, ratio: String) -> Self {
        self.ratio = ratio;
        self
    }

    /// Adds a target and whether it is met (`false` when a value is missing: NaN).
    pub fn target(mut self, target: &str, met: bool) -> Self {
        self.target = target.into();
        self.met = Some(met);
        self
    }
}

fn verdict(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "met",
        Some(false) => "MISSED",
        None => "",
    }
}

/// Prints `rows` as a Markdown table and writes them to `target/bench-<kind>-<build>.{md,json}`.
pub fn publish(kind: &str, title: &str, rows: &[Row]) {
    let mut md = format!("{title} ({})\n\n", profile());
    md.push_str("| benchmark | value | ratio | target |\n| --- | ---: | --- | --- |\n");
    for row in rows {
        let target = match row.met {
            Some(_) => format!("{}: {}", row.target, verdict(row.met)),
            None => String::new(),
        };
        let _ = writeln!(
            md,
            "| {} | {:.1} {} | {} | {} |",
            row.label, row.value, row.unit, row.ratio, target
        );
    }
    println!("\n{md}");

    let mut json = format!(
        "{{\"build\": {}, \"profile\": {}, \"rows\": [\n",
        quote(build()),
        quote(profile())
    );
    for (i, row) in rows.iter().enumerate() {
        let value = if row.value.is_finite() {
            format!("{}", row.value)
        } else {
            "null".into()
        };
        let met = match row.met {
            Some(m) => m.to_string(),
            None => "null".into(),
        };
        let _ = writeln!(
            json,
            "  {{\"key\": {}, \"label\": {}, \"value\": {value}, \"unit\": {}, \"ratio\": {}, \"target\": {}, \"met\": {met}}}{}",
            quote(&row.key),
            quote(&row.label),
            quote(row.unit),
            quote(&row.ratio),
            quote(&row.target),
            if i + 1 < rows.len() { "," } else { "" }
        );
    }
    json.push_str("]}\n");
    let dir = out_dir();
    let stem = format!("bench-{kind}-{}", build());
    let _ = std::fs::write(dir.join(format!("{stem}.md")), md);
    let _ = std::fs::write(dir.join(format!("{stem}.json")), json);
}

/// A JSON string literal.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
