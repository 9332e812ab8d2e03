#!/usr/bin/env bash
# Instructions per operation of each hot path, counted by callgrind: repeatable on a noisy
# machine, unlike time. Each path runs at two iteration counts; the difference divided by
# the extra iterations is the per-op cost, with setup cancelled out.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "instructions: valgrind not found (apt-get install valgrind)" >&2; exit 1; }
cargo build -q --release -p alkstore-mem-bench --example hot_paths
bin=target/release/examples/hot_paths
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$2" 2>&1 | awk '/Collected :/ { print $4 }'; }
per_op() { local a b; a=$(count "$1" 20000); b=$(count "$1" 60000); echo $(( (b - a) / 40000 )); }
floor=$(per_op floor)
echo "| path | instructions/op | vs floor |"
echo "| --- | ---: | ---: |"
echo "| floor: hashbrown + spin insert/remove | $floor | 1.00x |"
for path in floor-std cycle hand-rolled dashmap busy renew holder is_held; do
  n=$(per_op "$path")
  printf '| %s | %d | %s |\n' "$path" "$n" "$(awk -v a="$n" -v b="$floor" 'BEGIN { printf "%.2fx", a / b }')"
done
