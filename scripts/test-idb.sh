#!/usr/bin/env bash
# `make test-idb`: every suite of the browser engine (adapters/idb), and a count of what ran.
#   1. natively: the transaction bodies' unit tests, the host build's Unavailable, doctests;
#   2. in headless Chromium (wasm-bindgen-test + ChromeDriver): the conformance suite and the
#      engine's own tests, in a window and in a dedicated worker;
#   3. across contexts (harness/test.mjs: playwright-core on the system Chromium, pages served
#      on 127.0.0.1:8790-8799): 2 pages and 4 dedicated workers contending, exact FIFO, and the
#      faults (terminated holder, stalled holder fenced off, closed page's ticket skipped);
#   4. the demo page, run headless, its outcome checked.
# Fails loudly when a browser, driver or harness piece is missing, or when a part ran no test.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "test-idb: error: $*" >&2; exit 1; }

export CHROMEDRIVER="${CHROMEDRIVER:-$(command -v chromedriver || true)}"
[ -n "$CHROMEDRIVER" ] && [ -x "$CHROMEDRIVER" ] || die "ChromeDriver not found: run 'make setup' (as root) or install chromium-driver"
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || die "Chromium not found at ${CHROMIUM:-/usr/bin/chromium}: run 'make setup' (as root)"
command -v wasm-bindgen-test-runner >/dev/null || die "wasm-bindgen-test-runner missing: run 'make setup'"
export WASM_BINDGEN_TEST_TIMEOUT="${WASM_BINDGEN_TEST_TIMEOUT:-180}"

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
count() { # passed|failed in the cargo test summaries of a log
  awk -v what="$2" '/^test result:/ { for (i = 1; i <= NF; i++) if ($i ~ "^" what) s += $(i-1) } END { print s + 0 }' "$1"
}

echo "== alkstore-idb: native (transaction bodies, host build, doctests)"
cargo test -p alkstore-idb 2>&1 | tee "$log/native" | grep -E '^(test result|error)' || true
[ "${PIPESTATUS[0]}" -eq 0 ] || die "the native tests failed"
native=$(count "$log/native" passed)

run_browser() { # test binary -> log
  (cd adapters/idb && cargo test --target wasm32-unknown-unknown --test "$1") >"$log/$1" 2>&1 \
    || { cat "$log/$1"; die "$1 failed in Chromium"; }
  grep -q '^Running headless tests in Chrome' "$log/$1" || { cat "$log/$1"; die "$1 did not run in headless Chromium"; }
  local n; n=$(count "$log/$1" passed)
  [ "$n" -gt 0 ] || { cat "$log/$1"; die "$1 ran no test"; }
  echo "$1: $n passed, $(count "$log/$1" failed) failed" >&2
  echo "$n"
}
echo "== alkstore-idb: headless Chromium, window and dedicated worker"
window=$(( $(run_browser conformance_window) + $(run_browser engine_window) ))
worker=$(( $(run_browser conformance_worker) + $(run_browser engine_worker) ))

echo "== alkstore-idb: across pages and workers (harness/test.mjs)"
scripts/idb-harness.sh test 2>&1 | tee "$log/cross" | grep -vE '^(warning|  *[|=]|  *-->|\.\.\.|[0-9 ]*\|)' || true
[ "${PIPESTATUS[0]}" -eq 0 ] || die "the cross-context tests failed"
cross=$(sed -n 's/^idb cross-context: \([0-9]*\) passed, 0 failed$/\1/p' "$log/cross")
[ -n "$cross" ] && [ "$cross" -gt 0 ] || die "the cross-context harness ran no test"

echo "== alkstore-idb: the demo page, headless"
node adapters/idb/harness/demo.mjs target/idb-www/pkg >"$log/demo" 2>&1 || { cat "$log/demo"; die "the demo failed"; }
tail -1 "$log/demo"

total=$((native + window + worker + cross + 1))
echo "alkstore-idb: native $native, window $window, dedicated worker $worker, cross-context $cross, demo 1"
echo "test-idb: $total passed, 0 failed"
