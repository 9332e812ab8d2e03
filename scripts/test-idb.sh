#!/usr/bin/env bash
# `make test-idb`: every suite of the browser engine (adapters/idb), and a count of what ran.
#   1. natively: the transaction bodies' unit tests, the host build's Unavailable, doctests;
#   2. in headless Chromium (wasm-bindgen-test + ChromeDriver): the conformance suite, the
#      engine's own tests and its fault tests (clock steps, forged rows, a closed or deleted
#      database), in a window and in a dedicated worker;
#   3. across contexts (harness/test.mjs: playwright-core on the system Chromium, pages served
#      on 127.0.0.1:8790-8799): 2 pages and 4 dedicated workers contending, exact FIFO, and the
#      faults (terminated holder, stalled holder fenced off, closed page's ticket skipped);
#   4. liveness (harness/liveness.mjs): holders' tabs closed and workers terminated, dead
#      waiters, tabs closed right after sending acquire, 20 of each, taken over long before the
#      ttl (the figures printed: median, p95, max from the death to the grant elsewhere);
#   5. the scenarios (harness/scenarios.mjs): clocks stepped or skewed in one context or all,
#      handles and dropped futures, heavier contention, faults, hostile rows, messages and names;
#   6. the demo page, run headless on the npm package (`make js`), its outcome checked: a
#      leader election across 3 tabs and 6 workers, the leader's tab closed and taken over well
#      before the ttl with a larger token, a frozen leader taken over at its ttl and fenced off.
# Every part runs with its output in a log: a part that fails, or that ran no test, stops the
# run with its log shown. Fails loudly when a browser, driver or harness piece is missing.
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

# Stops the run: the log of the part, then why.
fail() { # log why
  echo "---------- $(basename "$1"): its output ----------" >&2
  cat "$1" >&2
  echo "---------- end of $(basename "$1") ----------" >&2
  die "$2"
}
# Runs a part with its output in $log/<part>; stops when it exits non-zero.
run() { # part command...
  local part=$1
  shift
  "$@" >"$log/$part" 2>&1 || fail "$log/$part" "$part failed (exit status $?)"
}
# The passed (or failed) count of the cargo test summaries of a log.
count() { # log passed|failed
  awk -v what="$2" '/^test result:/ { for (i = 1; i <= NF; i++) if ($i ~ "^" what) s += $(i-1) } END { print s + 0 }' "$1"
}
# A cargo test part: it ran, something passed, nothing failed. Sets $passed.
cargo_part() { # part command...
  local part=$1
  run "$@"
  passed=$(count "$log/$part" passed)
  [ "$(count "$log/$part" failed)" -eq 0 ] || fail "$log/$part" "$part: some tests failed"
  [ "$passed" -gt 0 ] || fail "$log/$part" "$part ran no test"
}
# A Node driver's part: its last summary line is "<label>: N passed, 0 failed". Sets $passed.
node_part() { # part label command...
  local part=$1 label=$2
  shift 2
  run "$part" "$@"
  grep -E '^(ok  |FAIL)' "$log/$part" || true
  passed=$(sed -n "s/^$label: \([0-9][0-9]*\) passed, 0 failed\$/\1/p" "$log/$part" | tail -1)
  [ -n "$passed" ] && [ "$passed" -gt 0 ] || fail "$log/$part" "$part: no '$label: N passed, 0 failed' line (no test ran, or one failed)"
}

echo "== alkstore-idb: native (transaction bodies, host build, doctests)"
cargo_part native cargo test -p alkstore-idb
native=$passed
echo "native: $native passed"

# Runs test binary $2 in headless Chromium in context $1 (window or worker), as part $2_$1,
# and adds its count to $browser_passed. One build serves both contexts: the binaries configure
# none, and the runner takes it from WASM_BINDGEN_USE_BROWSER / _DEDICATED_WORKER.
# The engine binary names its context (--nocapture shows its console line), checked here.
browser() { # window|worker test
  local part=$2_$1 mode=WASM_BINDGEN_USE_BROWSER context=Window args=
  [ "$1" = worker ] && mode=WASM_BINDGEN_USE_DEDICATED_WORKER context=DedicatedWorkerGlobalScope
  [ "$2" = engine ] && args="-- --nocapture"
  cargo_part "$part" env "$mode=1" bash -c "cd adapters/idb && cargo test --target wasm32-unknown-unknown --test '$2' $args"
  grep -q '^Running headless tests in Chrome' "$log/$part" || fail "$log/$part" "$part did not run in headless Chromium"
  [ "$2" != engine ] || grep -q "alkstore-idb test context: $context\$" "$log/$part" ||
    fail "$log/$part" "$part did not run in a $context"
  echo "$part: $passed passed"
  browser_passed=$((browser_passed + passed))
}
echo "== alkstore-idb: headless Chromium, window and dedicated worker"
browser_passed=0
for t in conformance engine faults; do browser window "$t"; done
window=$browser_passed
browser_passed=0
for t in conformance engine faults; do browser worker "$t"; done
worker=$browser_passed

# The harness in the npm package's profile (opt-level z, fat LTO), which the demo below builds
# anyway: one build of the wasm dependencies for both, not a release one and a wasm-size one.
export IDB_HARNESS_PROFILE=wasm-size
echo "== alkstore-idb: across pages and workers (harness/test.mjs)"
node_part cross "idb cross-context" scripts/idb-harness.sh test
cross=$passed

echo "== alkstore-idb: dead contexts (harness/liveness.mjs)"
node_part liveness "idb liveness" node adapters/idb/harness/liveness.mjs target/idb-www/pkg
grep -E ' kills, median ' "$log/liveness" || true
liveness=$passed

echo "== alkstore-idb: scenarios (harness/scenarios.mjs)"
node_part scenarios "idb scenarios" node adapters/idb/harness/scenarios.mjs target/idb-www/pkg
scenarios=$passed

echo "== alkstore-idb: the demo page (a leader election on the npm package), headless"
run demo-package scripts/js-build.sh
run demo node adapters/idb/harness/demo.mjs target/idb-www/pkg --package target/js/pkg
grep -E '^  (ok  |FAIL) ' "$log/demo" || true
grep -q '^demo-web: ok' "$log/demo" || fail "$log/demo" "the demo did not report 'demo-web: ok'"
tail -1 "$log/demo"

total=$((native + window + worker + cross + liveness + scenarios + 1))
echo "alkstore-idb: native $native, window $window, dedicated worker $worker, cross-context $cross, liveness $liveness, scenarios $scenarios, demo 1"
echo "test-idb: $total passed, 0 failed"
