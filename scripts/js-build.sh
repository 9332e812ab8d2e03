#!/usr/bin/env bash
# `make js`: the npm package of the browser engine (adapters/idb/js), from the sources alone.
#   1. the crate alkstore-idb-js for wasm32 (profile wasm-size: opt-level z, fat LTO);
#   2. wasm-bindgen --target web into target/js/pkg/wasm/ (an ES module that loads the .wasm
#      beside it through `new URL(.., import.meta.url)`: a page, a worker and Vite alike);
#   3. package.json, index.js, lib/*.js, index.d.ts, README.md and the licences beside it, then
#      `npm pack` into target/js/ (alkstore-idb-<version>.tgz);
#   (the build follows CARGO_TARGET_DIR; JS_OUT, target/js by default, is where the package
#   goes: make test's browser parts build it twice side by side, into two directories.)
#   4. a check that the tarball lists the .wasm, the .js, the .d.ts and the README, and the
#      package's size: wasm + JS, raw and gzipped.
# Prints the tarball's path last. Fails loudly when wasm-bindgen or npm is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "js-build: error: $*" >&2; exit 1; }
command -v wasm-bindgen >/dev/null || die "wasm-bindgen not found: run 'make setup'"
command -v npm >/dev/null || die "npm not found: run 'make idb-setup'"
src=adapters/idb/js
out=${JS_OUT:-target/js}
pkg=$out/pkg
profile=wasm-size

cargo build -q -p alkstore-idb-js --target wasm32-unknown-unknown --profile "$profile"
rm -rf "$pkg"
mkdir -p "$pkg/wasm"
wasm-bindgen --target web --no-typescript --remove-name-section --remove-producers-section --out-dir "$pkg/wasm" --out-name alkstore_idb \
  "${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/$profile/alkstore_idb_js.wasm"
cp "$src/package.json" "$src/index.js" "$src/index.d.ts" "$src/README.md" "$pkg/"
mkdir -p "$pkg/lib"
cp "$src"/lib/*.js "$pkg/lib/"
cp adapters/idb/LICENSE-MIT adapters/idb/LICENSE-APACHE "$pkg/"

version=$(node -p 'require("./adapters/idb/js/package.json").version')
tarball=$out/alkstore-idb-$version.tgz
rm -f "$tarball"
(cd "$pkg" && npm pack --silent --pack-destination .. >/dev/null) || die "npm pack failed"
[ -f "$tarball" ] || die "npm pack made no $tarball"
listing=$(tar -tzf "$tarball")
libs=$(cd "$src" && ls lib/*.js | sed 's|^|package/|')
for f in package/package.json package/index.js package/index.d.ts package/README.md \
  package/wasm/alkstore_idb.js package/wasm/alkstore_idb_bg.wasm $libs; do
  grep -qx "$f" <<<"$listing" || die "the tarball lacks $f; it lists: $listing"
done

raw_wasm=$(stat -c %s "$pkg/wasm/alkstore_idb_bg.wasm")
raw_js=$(cat "$pkg/index.js" "$pkg"/lib/*.js "$pkg/wasm/alkstore_idb.js" | wc -c)
gz_wasm=$(gzip -9 -c "$pkg/wasm/alkstore_idb_bg.wasm" | wc -c)
gz_js=$(cat "$pkg/index.js" "$pkg"/lib/*.js "$pkg/wasm/alkstore_idb.js" | gzip -9 -c | wc -c)
tgz=$(stat -c %s "$tarball")
echo "js: package size: wasm $raw_wasm B ($gz_wasm B gzipped) + JS $raw_js B ($gz_js B gzipped) = $((gz_wasm + gz_js)) B gzipped; tarball $tgz B ($(wc -l <<<"$listing") files)"
echo "$tarball"
