#!/usr/bin/env python3
"""`make bench`, last step: the workspace build and the downstream build side by side.

Reads the reports the speed and memory benchmarks wrote, target/bench-{speed,memory}-
{workspace,downstream}.json, and prints one Markdown table of values, ratios and targets per
build (also written to target/bench-summary.md). Targets and ratios are computed by the
benchmarks themselves (bench/benches/speed.rs and memory.rs); this only joins them.
"""

import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGET = ROOT / "target"
BUILDS = [
    ("workspace", "workspace build (thin LTO, 1 codegen unit)"),
    ("downstream", "downstream crate (no LTO, default codegen units)"),
]


def load(kind, build):
    path = TARGET / f"bench-{kind}-{build}.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


def cell(row):
    if row is None:
        return "not run"
    value = row["value"]
    text = "n/a" if value is None else f"{value:.1f} {row['unit']}"
    if row["ratio"]:
        text += f", {row['ratio']}"
    if row["met"] is not None:
        text += ", **met**" if row["met"] else ", **MISSED**"
    return text


def main():
    lines = [
        "alkstore-mem benchmarks: one run of each build (medians of criterion samples for "
        "times; ratios are within one build's run)",
        "",
        "| benchmark | target | " + " | ".join(title for _, title in BUILDS) + " |",
        "| --- | --- | " + " | ".join("---" for _ in BUILDS) + " |",
    ]
    missing = []
    for kind in ("speed", "memory"):
        reports = {}
        for build, _ in BUILDS:
            report = load(kind, build)
            if report is None:
                missing.append(f"target/bench-{kind}-{build}.json")
            else:
                reports[build] = {row["key"]: row for row in report["rows"]}
        order = []
        for build, _ in BUILDS:
            for key in reports.get(build, {}):
                if key not in order:
                    order.append(key)
        for key in order:
            rows = [reports.get(build, {}).get(key) for build, _ in BUILDS]
            first = next(row for row in rows if row is not None)
            lines.append(
                f"| {first['label']} | {first['target']} | "
                + " | ".join(cell(row) for row in rows)
                + " |"
            )
    if missing:
        lines += ["", "Not found (that benchmark did not run): " + ", ".join(missing)]
    text = "\n".join(lines) + "\n"
    print(text)
    TARGET.mkdir(exist_ok=True)
    (TARGET / "bench-summary.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
