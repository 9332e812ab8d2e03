#!/usr/bin/env bash
# Review of issue 15: does `make test-idb` (scripts/test-idb.sh) stop when its native part
# fails? A failing native test is added for the run only (tests/review15_must_fail.rs, removed
# afterwards); the script is stopped (by its own pid) as soon as it has moved on to the
# browser part, or when it ends. Prints PASS if the script stopped at the native failure,
# FINDING if it went on.
set -uo pipefail
cd "$(dirname "$0")/../../.."
t=adapters/idb/tests/review15_must_fail.rs
trap 'rm -f "$t"' EXIT
cat > "$t" <<'RS'
#![cfg(not(target_arch = "wasm32"))]
#[test]
fn review15_a_native_test_that_fails() {
    assert_eq!(1 + 1, 3, "review15: this native test fails on purpose");
}
RS
log=$(mktemp)
setsid scripts/test-idb.sh >"$log" 2>&1 &
pid=$!
verdict=""
for _ in $(seq 1 900); do
  if grep -q '== alkstore-idb: headless Chromium' "$log"; then verdict=FINDING; break; fi
  if ! kill -0 "$pid" 2>/dev/null; then break; fi
  sleep 1
done
kill -- -"$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rc=$?
grep -E 'test result|review15|== |error' "$log" | head -12
if [ -z "$verdict" ]; then
  if grep -q 'the native tests failed' "$log"; then verdict=PASS; else verdict="UNCLEAR (rc $rc)"; fi
fi
rm -f "$log"
echo "check-test-idb: $verdict"
[ "$verdict" = PASS ]
