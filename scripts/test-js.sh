#!/usr/bin/env bash
# `make test-js`: the npm package of the browser engine (adapters/idb/js), as a user gets it.
#   1. `make js`: built from the sources (wasm-bindgen --target web), `npm pack` into
#      target/js/, the tarball's listing checked, the package's size printed;
#   2. the types: test/types/use.ts checked by tsc --strict (typescript from
#      test/package-lock.json, npm ci) against the index.d.ts in the tarball;
#   3. test/test.mjs on that tarball, unpacked, in headless Chromium (pages served on
#      127.0.0.1:8800-8809): the suite in a window and in a dedicated worker, its tests of the
#      Web Locks spec alone again against Chromium's own navigator.locks (a control: they
#      test the spec, not our reading of it), the README's first example, the types against
#      the module (test/types.mjs), then 2 pages and 4 dedicated workers contending (query
#      order, steal in one transaction, FIFO), and a closed page's and a terminated worker's
#      request taken over at once (test/scenarios.mjs).
# Fails when a part fails or no test ran; the driver's output is shown when it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "test-js: error: $*" >&2; exit 1; }
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || die "Chromium not found at ${CHROMIUM:-/usr/bin/chromium}: run 'make setup' (as root)"

echo "== alkstore-idb npm package: build and npm pack"
# -a: tee must not truncate the file that standard error may be (make test's part log).
tarball=$(scripts/js-build.sh | tee -a /dev/stderr | tail -1)

echo "== alkstore-idb npm package: its TypeScript types, from the tarball, under tsc --strict"
tests=adapters/idb/js/test
if [ ! -x "$tests/node_modules/.bin/tsc" ] || [ "$tests/package-lock.json" -nt "$tests/node_modules/.package-lock.json" ]; then
  (cd "$tests" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || die "npm ci in $tests failed"
fi
log=$(mktemp)
scratch=$(mktemp -d)
trap 'rm -f "$log"; rm -rf "$scratch"' EXIT
mkdir -p "$scratch/node_modules"
tar -xzf "$tarball" -C "$scratch/node_modules"
mv "$scratch/node_modules/package" "$scratch/node_modules/alkstore-idb"
cp "$tests/types/use.ts" "$tests/types/tsconfig.json" "$scratch/"
"$tests/node_modules/.bin/tsc" -p "$scratch" || die "the package's types do not check (tsc -p $tests/types, against the tarball)"
echo "types: ok"

echo "== alkstore-idb npm package: headless Chromium, window, dedicated worker, across contexts"
status=0
node adapters/idb/js/test/test.mjs "$tarball" >"$log" 2>&1 || status=$?
grep -E '^(FAIL|contention:|cost in)' "$log" || true
passed=$(sed -n 's/^idb js: \([0-9][0-9]*\) passed, 0 failed$/\1/p' "$log" | tail -1)
if [ "$status" -ne 0 ] || [ -z "$passed" ] || [ "$passed" -eq 0 ]; then
  cat "$log" >&2
  die "the package's tests failed (exit status $status), or none ran"
fi
window=$(grep -c '^ok   window: ' "$log" || true)
worker=$(grep -c '^ok   dedicated worker: ' "$log" || true)
control=$(grep -c '^ok   navigator.locks (control): ' "$log" || true)
echo "alkstore-idb npm package: window $window, dedicated worker $worker, the spec's tests against navigator.locks (control) $control, cross-context $((passed - window - worker - control))"
echo "test-js: $passed passed, 0 failed (and the types check)"
