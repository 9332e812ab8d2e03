#!/usr/bin/env bash
# `make bench-browser`: the wasm registry against navigator.locks in headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
export CHROMEDRIVER="${CHROMEDRIVER:-$(command -v chromedriver || true)}"
[ -n "$CHROMEDRIVER" ] || { echo "bench-browser: error: chromedriver not found; run 'make setup' (as root) or install chromium-driver" >&2; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
(cd bench && cargo test --release --target wasm32-unknown-unknown --test browser -- --nocapture) >"$log" 2>&1 || { cat "$log"; exit 1; }
grep -E '^(browser benchmark|\|)' "$log" | tee target/bench-browser.md
