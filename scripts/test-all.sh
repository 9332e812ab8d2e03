#!/usr/bin/env bash
# `make test`: every check and suite, from a fresh clone, in as little wall time as two cores
# allow. The suites mostly wait (on servers, browsers, child processes, sleeps), the checks and
# builds mostly compute, so they overlap:
#   1. set-up and fmt (serial), then the engines' test binaries are built (one build for all);
#   2. in the background, each in a log of its own: the Redis suites, the PostgreSQL suites, the
#      tool's and the SQLite suites and the engines' doctests (the tool on servers of its own,
#      CLI_REDIS_PORT and CLI_PG_PORT, so that it does not share the engines' ports), the browser suites in two
#      parts (the conformance suite and the npm package; IndexedDB; nice 10), and the MSRV check
#      (its own target dir and toolchain, nice 10);
#   3. in the foreground meanwhile, at nice 10 (the suites first): clippy, rustdoc, the native
#      workspace tests, the demo, the no_std builds, the downstream crate.
# (Starting the browser suites and the MSRV check before the engines' build, in target dirs of
# their own, was tried: a cold run took 31 min against 17, the four compilers fighting over two
# cores.)
# Every part's output goes to target/test-logs/<part>.log; a part that fails has its log shown
# and fails the run (after the others have ended: no server or browser is left behind). The end
# is a table of parts, outcomes and wall times.
# Usage: scripts/test-all.sh (TEST_SERIAL=1: every part in the foreground, one after the other).
set -uo pipefail
cd "$(dirname "$0")/.."
logs=target/test-logs
rm -rf "$logs"
mkdir -p "$logs"
make="make -s --no-print-directory"
began=$(date +%s)
# No incremental compilation: a cold run writes incremental caches nobody reads (a cold
# `cargo test -p alkstore-pg --no-run` took 165 CPU-s without them, 193 with them). A developer's
# own cargo commands keep the default.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
declare -A started ended status
order=()
failed=()

stamp() { echo "[$(($(date +%s) - began))s] $*"; }
# Runs `make` targets one after the other as part $1 (its log: $logs/$1.log); 0 when all pass.
part() { # name target...
  local name=$1
  shift
  local t
  for t in "$@"; do
    echo "== make $t (at $(($(date +%s) - began)) s)" >>"$logs/$name.log"
    ${PART_NICE:+nice -n "$PART_NICE"} $make "$t" >>"$logs/$name.log" 2>&1 || return $?
  done
}
# Runs part $1 in a shell of its own and writes the CPU time it and its children used (user and
# system seconds, from `times`) to $logs/$1.cpu: where a cold run spends the machine.
timed_part() { # name target...
  bash -c 'part "$@"; s=$?; times >"$logs/$1.cpu"; exit $s' _ "$@"
}
record() { # name status
  ended[$1]=$(date +%s)
  status[$1]=$2
  if [ "$2" -eq 0 ]; then stamp "$1: ok"; else
    failed+=("$1")
    stamp "$1: FAILED (exit status $2); its log:"
    tail -n 150 "$logs/$1.log"
    echo "---------- end of $1 (whole log: $logs/$1.log) ----------"
  fi
}
foreground() { # name target...
  local name=$1
  order+=("$name")
  started[$name]=$(date +%s)
  stamp "$name: started"
  timed_part "$@"
  record "$name" $?
}
declare -A pids
background() { # name target...
  local name=$1
  order+=("$name")
  started[$name]=$(date +%s)
  stamp "$name: started in the background"
  if [ -n "${TEST_SERIAL:-}" ]; then timed_part "$@"; record "$name" $?; return; fi
  # A session of its own, so that an interrupt stops the whole part (make, cargo, servers'
  # wrappers, which then stop their servers by pid).
  setsid bash -c 'timed_part "$@"; s=$?; date +%s >"$logs/$1.end"; exit $s' _ "$@" &
  pids[$name]=$!
}
finish() {
  local name
  for name in "${!pids[@]}"; do
    wait "${pids[$name]}"
    record "$name" $?
    # When it really ended, not when it was waited for.
    [ -s "$logs/$name.end" ] && ended[$name]=$(cat "$logs/$name.end")
  done
  pids=()
}
export -f part timed_part
export logs make began
# Stops every background part (its whole session: make, cargo, servers' wrappers, which then
# stop their servers by pid) and waits for them.
stop_all() {
  local p
  for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done
  wait
}
trap 'stop_all; exit 130' INT TERM

foreground setup setup
foreground fmt fmt-check
[ ${#failed[@]} -eq 0 ] || exit 1
# The engines' test binaries first, so that their suites start while the rest compiles.
order+=(build-engines)
started[build-engines]=$(date +%s)
# One build of every engine package's tests (the suites run their binaries from it:
# scripts/engine-tests.sh).
(part build-engines build-test-engines
  s=$?; times >"$logs/build-engines.cpu"; exit $s)
record build-engines $?
if [ ${#failed[@]} -ne 0 ]; then stop_all; exit 1; fi

background redis test-redis
# Two PostgreSQL cancel-safety tests bound a holder's renewals while 10 tasks drop hundreds of
# acquires a second around it: beside the compilers (load 12-30) they failed where a quiet
# machine passes them, so they run last, alone (pg-cancel below).
PG_TEST_ARGS="-- --exact $(printf -- '--skip %s ' $($make print-pg-cancel))" \
  background pg test-pg
CLI_REDIS_PORT=${CLI_REDIS_PORT:-6400} CLI_PG_PORT=${CLI_PG_PORT:-5438} \
  background cli-sqlite test-cli test-sqlite test-engine-docs
PART_NICE=10 background msrv msrv
# The browser suites in two parts (their pages on ports of their own; the npm package built into
# a directory of each): they mostly wait on Chromium's timers, and the browser part was the
# longest of a run (1204 s of a 1777 s one).
# At nice 10 too: they compile wasm (the harness in release) beside the server suites, whose
# fresh sessions then once took longer than a test's io_timeout; their own tests have
# margins of tens of seconds.
JS_OUT=target/js-test PART_NICE=10 background browser test-browser test-js
PART_NICE=10 background idb test-idb
# The checks and builds below compute, and yield the CPU to the suites (nice 10): a renewal or
# a wake-up stuck behind a compiler fails a timing-bound suite, a compiler behind a suite only
# ends a little later.
PART_NICE=10 foreground clippy clippy
PART_NICE=10 foreground doc doc
PART_NICE=10 foreground native test-native demo-check
PART_NICE=10 foreground builds nostd check-downstream
finish
foreground pg-cancel test-pg-cancel

echo
# CPU seconds (user + system) of a part's processes: the second line of its `times` (its
# children's, "0m1.5s 0m0.2s"; not through a pipe, whose subshell would count none).
cpu() { # name
  [ -s "$logs/$1.cpu" ] || { echo "?"; return; }
  awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } printf "%d s", t }' "$logs/$1.cpu"
}
echo "| part | outcome | wall time | CPU time |"
echo "|---|---|---|---|"
for name in "${order[@]}"; do
  outcome=ok
  [ "${status[$name]}" -eq 0 ] || outcome="FAILED ($logs/$name.log)"
  echo "| $name | $outcome | $((ended[$name] - started[$name])) s | $(cpu "$name") |"
done
echo "| all | $([ ${#failed[@]} -eq 0 ] && echo ok || echo "FAILED: ${failed[*]}") | $(($(date +%s) - began)) s |"
[ ${#failed[@]} -eq 0 ]
