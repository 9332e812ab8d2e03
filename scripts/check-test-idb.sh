#!/usr/bin/env bash
# A check of scripts/test-idb.sh itself (a few seconds, no build, no browser): it runs a copy of
# the script in a scratch tree whose cargo, node, wasm-bindgen, ChromeDriver and Chromium are
# stand-ins, once with every part passing and once per way a part can go wrong (it fails, it
# runs no test, it exits 0 but reports a failure, it does not run in Chromium or not in the
# context asked for). Every broken part must stop `make test-idb` with a non-zero status and
# show that part's own output.
# Usage: scripts/check-test-idb.sh [-q] (-q: only problems and the summary; `make test-idb` runs
# it so before the suites).
set -euo pipefail
quiet=; [ "${1:-}" = -q ] && quiet=1
here="$(cd "$(dirname "$0")" && pwd)"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/scripts" "$scratch/bin" "$scratch/adapters/idb/harness/node_modules/playwright-core"
cp "$here/test-idb.sh" "$here/idb-harness.sh" "$scratch/scripts/"

# The stand-ins print what the real tools print; $BREAK ("<part>=<how>") breaks one part.
cat >"$scratch/bin/cargo" <<'SH'
#!/usr/bin/env bash
part=native
for a in "$@"; do case "$prev" in --test) part=$a ;; esac; prev=$a; done
# The browser binaries run in the context the runner's variable names.
if [ "$part" != native ]; then
  if [ -n "${WASM_BINDGEN_USE_DEDICATED_WORKER:-}" ]; then part=${part}_worker
  elif [ -n "${WASM_BINDGEN_USE_BROWSER:-}" ]; then part=${part}_window
  else part=${part}_node
  fi
fi
[ "$1" = build ] && exit 0
how=; [ "${BREAK%%=*}" = "$part" ] && how=${BREAK#*=}
[ "$part" = native ] || [ "$how" = not-in-chrome ] || echo "Running headless tests in Chrome"
# The engine binary's console line naming its context (a wrong one when broken so).
case "$part:$how" in
  engine_window:wrong-context) echo "alkstore-idb test context: DedicatedWorkerGlobalScope" ;;
  engine_worker:wrong-context) echo "alkstore-idb test context: Window" ;;
  engine_window:*) echo "alkstore-idb test context: Window" ;;
  engine_worker:*) echo "alkstore-idb test context: DedicatedWorkerGlobalScope" ;;
esac
case "$how" in
  fail) echo "MARKER-$part: an assertion failed"; echo "test result: FAILED. 4 passed; 1 failed; 0 ignored"; exit 101 ;;
  empty) echo "MARKER-$part: nothing to run"; echo "test result: ok. 0 passed; 0 failed; 0 ignored" ;;
  *) echo "MARKER-$part"; echo "test result: ok. 5 passed; 0 failed; 0 ignored" ;;
esac
SH
cat >"$scratch/bin/node" <<'SH'
#!/usr/bin/env bash
case "$1" in
  *test.mjs) part=cross label="idb cross-context" ;;
  *scenarios.mjs) part=scenarios label="idb scenarios" ;;
  *liveness.mjs) part=liveness label="idb liveness" ;;
  *demo.mjs) part=demo ;;
  *) echo "node stand-in: unexpected $*" >&2; exit 2 ;;
esac
how=; [ "${BREAK%%=*}" = "$part" ] && how=${BREAK#*=}
echo "MARKER-$part"
if [ "$part" = demo ]; then
  [ "$how" = fail ] && { echo "demo-web: FAILED"; exit 1; }
  echo "demo-web: ok"; exit 0
fi
case "$how" in
  fail) echo "FAIL something"; echo "$label: 6 passed, 1 failed"; exit 1 ;;
  lying) echo "FAIL something"; echo "$label: 6 passed, 1 failed"; exit 0 ;;
  empty) exit 0 ;;
  *) echo "ok   something"; echo "$label: 7 passed, 0 failed" ;;
esac
SH
# The npm package's build (the demo runs on it): a stand-in that prints the tarball's path.
printf '#!/bin/sh\necho target/js/alkstore-idb-0.0.0.tgz\n' >"$scratch/scripts/js-build.sh"
chmod +x "$scratch/scripts/js-build.sh"
for tool in wasm-bindgen wasm-bindgen-test-runner chromedriver chromium; do
  printf '#!/bin/sh\nexit 0\n' >"$scratch/bin/$tool"
done
chmod +x "$scratch/bin/"*

problems=0
# expect <BREAK> <0|fail> <text the output must hold>
expect() {
  local out status=0
  out=$(cd "$scratch" && BREAK="$1" PATH="$scratch/bin:$PATH" CHROMIUM="$scratch/bin/chromium" \
    CHROMEDRIVER="$scratch/bin/chromedriver" scripts/test-idb.sh 2>&1) || status=$?
  local wrong=
  if [ "$2" = 0 ] && [ "$status" -ne 0 ]; then wrong="it exited $status"; fi
  if [ "$2" = fail ] && [ "$status" -eq 0 ]; then wrong="it exited 0"; fi
  grep -qF -- "$3" <<<"$out" || wrong="${wrong:+$wrong; }no \"$3\" in its output"
  if [ -z "$wrong" ]; then
    [ -n "$quiet" ] || echo "ok   ${1:-every part passes}: $([ "$2" = 0 ] && echo passes || echo "stops (status $status)"), saying \"$3\""
  else
    problems=$((problems + 1))
    echo "FAIL ${1:-every part passes}: $wrong"
    echo "$out" | sed 's/^/     | /'
  fi
}
# Every part passing: 5 native, 3 x 5 in a window, 3 x 5 in a worker, 7 + 7 + 7, the demo.
expect "" 0 "test-idb: 57 passed, 0 failed"
expect native=fail fail "MARKER-native: an assertion failed"
expect native=empty fail "native ran no test"
expect engine_worker=fail fail "MARKER-engine_worker: an assertion failed"
expect faults_window=empty fail "faults_window ran no test"
expect conformance_window=not-in-chrome fail "did not run in headless Chromium"
expect engine_worker=wrong-context fail "engine_worker did not run in a DedicatedWorkerGlobalScope"
expect engine_window=wrong-context fail "engine_window did not run in a Window"
expect cross=fail fail "MARKER-cross"
expect cross=lying fail "no 'idb cross-context: N passed, 0 failed' line"
expect liveness=lying fail "no 'idb liveness: N passed, 0 failed' line"
expect scenarios=empty fail "no 'idb scenarios: N passed, 0 failed' line"
expect demo=fail fail "demo-web: FAILED"
if [ "$problems" -gt 0 ]; then
  echo "check-test-idb: $problems problem(s)" >&2
  exit 1
fi
echo "check-test-idb: 13 passed, 0 failed"
