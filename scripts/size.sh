#!/usr/bin/env bash
# `make size`: the .wasm a user ships for a small module on the web adapter (size-probe/),
# built for size, after wasm-bindgen: once with try_lock / renew / release / holder (the
# module the 40 KiB target is set for), once with the `waiting` feature, which adds an async
# `acquire` export (a Promise on wasm-bindgen-futures).
set -euo pipefail
cd "$(dirname "$0")/.."

# build FEATURES OUT: builds the probe with FEATURES into OUT (after wasm-bindgen).
build() {
  local features=$1 out=$2
  cargo build -q -p alkstore-mem-size-probe --target wasm32-unknown-unknown --profile wasm-size $features
  rm -rf "$out"
  wasm-bindgen --target web --remove-name-section --remove-producers-section \
    --out-dir "$out" target/wasm32-unknown-unknown/wasm-size/alkstore_mem_size_probe.wasm
}
gz() { gzip -9 -c "$1" | wc -c; }

build "" target/size-probe
base="target/size-probe/alkstore_mem_size_probe_bg.wasm"
base_raw=$(wc -c <"$base"); base_gz=$(gz "$base")
js="target/size-probe/alkstore_mem_size_probe.js"
build "--features waiting" target/size-probe-waiting
waiting="target/size-probe-waiting/alkstore_mem_size_probe_bg.wasm"
verdict=$([ "$base_gz" -lt 40960 ] && echo met || echo MISSED)
{
  echo "| artifact | bytes | gzipped |"
  echo "| --- | ---: | ---: |"
  echo "| size-probe .wasm: try_lock, renew, release, holder (opt-level z, fat LTO, after wasm-bindgen) | $base_raw | $base_gz |"
  echo "| the same with \`--features waiting\`: an async \`acquire\` export too | $(wc -c <"$waiting") | $(gz "$waiting") |"
  echo "| its JS glue (wasm-bindgen --target web) | $(wc -c <"$js") | $(gz "$js") |"
  echo
  echo "target: the try_lock/renew/release/holder .wasm under 40 KiB (40960 bytes) gzipped: $verdict"
} | tee target/size.md
if command -v twiggy >/dev/null; then
  # The shipped file has no names; a copy that keeps them says what the bytes are.
  named=target/size-probe-named
  rm -rf "$named"
  wasm-bindgen --target web --out-dir "$named" target/wasm32-unknown-unknown/wasm-size/alkstore_mem_size_probe.wasm
  echo
  echo "largest items of the waiting build (twiggy top, on a copy that keeps the name section):"
  twiggy top -n 20 "$named/alkstore_mem_size_probe_bg.wasm"
fi
