#!/usr/bin/env bash
# Review of issue 15: scripts/test-idb.sh's run_browser, taken verbatim from the script, with
# a stand-in `cargo` whose browser run fails. run_browser runs inside $( ) there, so its
# `die` only ends that subshell and the log it prints is captured by the $( ): what does
# the user see? (PASS if the failure's log reaches the terminal.)
set -uo pipefail
cd "$(dirname "$0")/../../.."
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
cat > "$fake/cargo" <<'SH'
#!/bin/sh
echo "Running headless tests in Chrome"
echo "test conformance::exclusion::first_try_lock_wins ... FAILED"
echo "REVIEW15-MARKER: the assertion that failed"
echo "test result: FAILED. 55 passed; 1 failed"
exit 101
SH
chmod +x "$fake/cargo"
fn=$(sed -n '/^run_browser() {/,/^}/p' scripts/test-idb.sh)
out=$(PATH="$fake:$PATH" bash -c "
set -euo pipefail
die() { echo \"test-idb: error: \$*\" >&2; exit 1; }
log=\$(mktemp -d)
count() { awk -v what=\"\$2\" '/^test result:/ { for (i = 1; i <= NF; i++) if (\$i ~ \"^\" what) s += \$(i-1) } END { print s + 0 }' \"\$1\"; }
$fn
mkdir -p adapters/idb
window=\$(( \$(run_browser conformance_window) + 1 ))
echo \"went on: window=\$window\"
" 2>&1)
rc=$?
echo "$out"
echo "exit status: $rc"
if echo "$out" | grep -q REVIEW15-MARKER; then echo "check-run-browser: PASS"; else echo "check-run-browser: FINDING (the failing run's log is not shown)"; exit 1; fi
