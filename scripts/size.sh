#!/usr/bin/env bash
# `make size`: the .wasm a user ships for a small module that uses try_lock / renew /
# release / holder through the web adapter (size-probe/), built for size, after wasm-bindgen.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build -q -p alkstore-mem-size-probe --target wasm32-unknown-unknown --profile wasm-size
out=target/size-probe
rm -rf "$out"
wasm-bindgen --target web --remove-name-section --remove-producers-section \
  --out-dir "$out" target/wasm32-unknown-unknown/wasm-size/alkstore_mem_size_probe.wasm
wasm="$out/alkstore_mem_size_probe_bg.wasm"
raw=$(wc -c <"$wasm")
gz=$(gzip -9 -c "$wasm" | wc -c)
js=$(wc -c <"$out/alkstore_mem_size_probe.js")
verdict=$([ "$gz" -lt 40960 ] && echo met || echo MISSED)
{
  echo "| artifact | bytes | gzipped |"
  echo "| --- | ---: | ---: |"
  echo "| size-probe .wasm (opt-level z, fat LTO, after wasm-bindgen) | $raw | $gz |"
  echo "| its JS glue (wasm-bindgen --target web) | $js | $(gzip -9 -c "$out/alkstore_mem_size_probe.js" | wc -c) |"
  echo
  echo "target: .wasm under 40 KiB (40960 bytes) gzipped: $verdict"
} | tee target/size.md
if command -v twiggy >/dev/null; then
  # The shipped file has no names; a copy that keeps them says what the bytes are.
  named=target/size-probe-named
  rm -rf "$named"
  wasm-bindgen --target web --out-dir "$named" target/wasm32-unknown-unknown/wasm-size/alkstore_mem_size_probe.wasm
  echo
  echo "largest items (twiggy top, on a copy that keeps the name section):"
  twiggy top -n 20 "$named/alkstore_mem_size_probe_bg.wasm"
fi
