#!/usr/bin/env bash
# What the browser engine's harness needs beyond scripts/setup.sh (wasm-bindgen-cli, Chromium):
# Node.js 18+ with npm (Debian's nodejs and npm, as root, when missing) and playwright-core,
# installed with `npm ci` from the committed package-lock.json (it drives the system Chromium;
# no browser is downloaded). Quiet when everything is there.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "idb-setup: $*" >&2; }
die() { echo "idb-setup: error: $*" >&2; exit 1; }

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing nodejs and npm with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null || die "apt-get update failed"
    apt-get install -y -qq nodejs npm >/dev/null || die "apt-get install nodejs npm failed"
  else
    die "the browser engine's harness needs Node.js 18+ and npm: install them (Debian: 'sudo apt-get install nodejs npm')"
  fi
fi
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || die "Node.js $major is too old for the harness: 18 or newer is needed"

harness=adapters/idb/harness
stamp=$harness/node_modules/.package-lock.json
if [ ! -d "$harness/node_modules/playwright-core" ] || [ "$harness/package-lock.json" -nt "$stamp" ]; then
  say "installing the harness's npm packages (npm ci, from package-lock.json)"
  (cd "$harness" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error >/dev/null) \
    || die "npm ci in $harness failed"
fi
