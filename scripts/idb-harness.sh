#!/usr/bin/env bash
# Builds the alkstore-idb harness bundle (wasm-bindgen --target web) and runs one of the
# harness's Node drivers on it: test (cross-context tests), scenarios (clocks, handles,
# contention, faults, hostile code), bench, demo (which also builds the npm package, `make js`).
# Usage: scripts/idb-harness.sh test|scenarios|bench|demo [args...]
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:?usage: scripts/idb-harness.sh test|scenarios|bench|demo}"
shift
die() { echo "idb-harness: error: $*" >&2; exit 1; }
command -v node >/dev/null || die "node not found: install Node.js 18+ (Debian: apt-get install nodejs npm)"
command -v wasm-bindgen >/dev/null || die "wasm-bindgen not found: run 'make setup'"
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || die "Chromium not found at ${CHROMIUM:-/usr/bin/chromium}: run 'make setup' (as root)"
[ -d adapters/idb/harness/node_modules/playwright-core ] || die "playwright-core missing: run 'make setup' (npm ci in adapters/idb/harness)"
# IDB_HARNESS_PROFILE: release (the benchmarks'); `make test-idb` builds it with wasm-size, the
# npm package's profile, so that both share one build of their dependencies.
profile=${IDB_HARNESS_PROFILE:-release}
cargo build -q -p alkstore-idb-harness --target wasm32-unknown-unknown --profile "$profile"
out=target/idb-www/pkg
wasm-bindgen --target web --no-typescript --out-dir "$out" \
  "${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/$profile/alkstore_idb_harness.wasm"
if [ "$what" = demo ]; then
  # The demo's pages and workers use the npm package (`make js`: target/js/pkg).
  scripts/js-build.sh >&2
  set -- --package target/js/pkg "$@"
fi
exec node "adapters/idb/harness/$what.mjs" "$out" "$@"
