#!/usr/bin/env bash
# Installs what `make test` needs, idempotently and quietly when everything is there:
#   - the rustup targets wasm32-unknown-unknown and wasm32v1-none, plus rustfmt and clippy;
#   - wasm-bindgen-cli at exactly the wasm-bindgen version pinned in Cargo.lock;
#   - Chromium and ChromeDriver (Debian's chromium, chromium-driver) when the browser suite is wanted.
# Usage: scripts/setup.sh [--no-browser]
set -euo pipefail
cd "$(dirname "$0")/.."

want_browser=1
[ "${1:-}" = "--no-browser" ] && want_browser=0

say() { echo "setup: $*" >&2; }
die() { echo "setup: error: $*" >&2; exit 1; }

# Rust targets and components.
installed_targets=$(rustup target list --installed)
for target in wasm32-unknown-unknown wasm32v1-none; do
  if ! grep -qx "$target" <<<"$installed_targets"; then
    say "adding rustup target $target"
    rustup target add "$target" >/dev/null
  fi
done
installed_components=$(rustup component list --installed 2>/dev/null || true)
for component in rustfmt clippy; do
  if ! grep -q "^$component" <<<"$installed_components"; then
    say "adding rustup component $component"
    rustup component add "$component" >/dev/null
  fi
done

# wasm-bindgen-cli must match the wasm-bindgen crate in Cargo.lock exactly.
[ -f Cargo.lock ] || cargo generate-lockfile
wb_version=$(scripts/locked-version.sh wasm-bindgen)
[ -n "$wb_version" ] || die "no wasm-bindgen in Cargo.lock"
have=$(wasm-bindgen-test-runner --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$wb_version" ]; then
  say "installing wasm-bindgen-cli $wb_version (found: ${have:-none}); this takes a few minutes once"
  # Not --locked: the package index here lacks a version that wasm-bindgen-cli's lockfile pins.
  cargo install -q wasm-bindgen-cli --version "$wb_version" || die "cargo install wasm-bindgen-cli --version $wb_version failed"
fi

[ "$want_browser" = 1 ] || exit 0

# Chromium and its driver, from Debian.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing chromium and chromium-driver with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null || die "apt-get update failed"
    apt-get install -y -qq chromium chromium-driver >/dev/null || die "apt-get install chromium chromium-driver failed"
  else
    die "the browser suite needs Chromium and ChromeDriver: install them (Debian: 'sudo apt-get install chromium chromium-driver') and run make again"
  fi
fi
command -v chromedriver >/dev/null || die "chromedriver is still missing after installing chromium-driver"
