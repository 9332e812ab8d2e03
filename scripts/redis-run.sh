#!/usr/bin/env bash
# Runs a command against a scratch Redis of its own, and stops that server afterwards (also
# when the command fails or is interrupted). Never touches another Redis.
#   scripts/redis-run.sh [--port N] -- command args...
# The server listens on 127.0.0.1:$port (default 6390) with a fresh --dir (mktemp -d), no RDB
# snapshots and no AOF; the command gets ALKSTORE_REDIS_URL=redis://127.0.0.1:$port/.
set -euo pipefail

port=6390
if [ "${1:-}" = "--port" ]; then port=$2; shift 2; fi
[ "${1:-}" = "--" ] && shift

scripts_dir=$(cd "$(dirname "$0")" && pwd)
"$scripts_dir/redis-setup.sh"

if redis-cli -p "$port" ping >/dev/null 2>&1; then
  echo "redis-run: error: something already listens on 127.0.0.1:$port; not touching it" >&2
  exit 1
fi

dir=$(mktemp -d -t alkstore-redis.XXXXXX)
pidfile="$dir/redis.pid"
stop() {
  if [ -s "$pidfile" ]; then
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap stop EXIT INT TERM

redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
  --daemonize yes --pidfile "$pidfile" --logfile "$dir/redis.log"
for _ in $(seq 100); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.05
done
redis-cli -p "$port" ping >/dev/null || { echo "redis-run: error: redis-server did not start; log:" >&2; cat "$dir/redis.log" >&2; exit 1; }

export ALKSTORE_REDIS_URL="redis://127.0.0.1:$port/"
"$@"
