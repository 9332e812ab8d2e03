#!/usr/bin/env bash
# Instructions per operation of each hot path, counted by callgrind: repeatable on a noisy
# machine, unlike time. Each path runs at two iteration counts; the difference divided by
# the extra iterations is the per-op cost, with setup cancelled out. Two builds of the same
# driver: the workspace's (thin LTO, one codegen unit) and bench/downstream's (no LTO, as a
# user's crate builds the core).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "instructions: valgrind not found (apt-get install valgrind)" >&2; exit 1; }
cargo build -q --release -p alkstore-mem-bench --example hot_paths
cargo build -q --release --manifest-path bench/downstream/Cargo.toml --example hot_paths
workspace=target/release/examples/hot_paths
downstream=bench/downstream/target/release/examples/hot_paths
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" "$2" "$3" 2>&1 | awk '/Collected :/ { print $4 }'; }
per_op() { local a b; a=$(count "$1" "$2" 20000); b=$(count "$1" "$2" 60000); echo $(( (b - a) / 40000 )); }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
floor_ws=$(per_op "$workspace" floor)
floor_ds=$(per_op "$downstream" floor)
echo "| path | instructions/op, workspace (thin LTO) | vs floor | instructions/op, downstream (no LTO) | vs floor |"
echo "| --- | ---: | ---: | ---: | ---: |"
echo "| floor: hashbrown + spin insert/remove | $floor_ws | 1.00x | $floor_ds | 1.00x |"
for path in floor-std cycle hand-rolled dashmap busy renew holder is_held; do
  ws=$(per_op "$workspace" "$path")
  ds=$(per_op "$downstream" "$path")
  printf '| %s | %d | %s | %d | %s |\n' "$path" "$ws" "$(ratio "$ws" "$floor_ws")" "$ds" "$(ratio "$ds" "$floor_ds")"
done
