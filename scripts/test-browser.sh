#!/usr/bin/env bash
# Runs the conformance suite (wasm-tests/tests/*.rs) in headless Chromium and fails unless
# tests really ran there: a missing browser or driver is an error that says what to install.
set -euo pipefail
cd "$(dirname "$0")/.."

export CHROMEDRIVER="${CHROMEDRIVER:-$(command -v chromedriver || true)}"
if [ -z "$CHROMEDRIVER" ] || [ ! -x "$CHROMEDRIVER" ]; then
  echo "test-browser: error: ChromeDriver not found. Install Chromium and its driver (Debian: apt-get install chromium chromium-driver), or run 'make setup' as root." >&2
  exit 1
fi
command -v chromium >/dev/null || { echo "test-browser: error: chromium not found at /usr/bin/chromium; install Debian's chromium package (make setup does, as root)." >&2; exit 1; }
command -v wasm-bindgen-test-runner >/dev/null || { echo "test-browser: error: wasm-bindgen-test-runner missing; run 'make setup'." >&2; exit 1; }
export WASM_BINDGEN_TEST_TIMEOUT="${WASM_BINDGEN_TEST_TIMEOUT:-120}"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
(cd wasm-tests && cargo test --target wasm32-unknown-unknown --test '*' "$@") 2>&1 | tee "$log" || status=$?

passed=$(awk '/^test result:/ { for (i = 1; i <= NF; i++) if ($i ~ /^passed/) s += $(i-1) } END { print s + 0 }' "$log")
failed=$(awk '/^test result:/ { for (i = 1; i <= NF; i++) if ($i ~ /^failed/) s += $(i-1) } END { print s + 0 }' "$log")
browsers=$(grep -c '^Running headless tests in Chrome' "$log" || true)
echo "the browser suite ran in $browsers headless Chromium sessions"
echo "browser: $passed passed, $failed failed"
if [ "$status" -ne 0 ]; then exit "$status"; fi
if [ "$passed" -eq 0 ] || [ "$browsers" -eq 0 ]; then
  echo "test-browser: error: no test ran in Chromium" >&2
  exit 1
fi
