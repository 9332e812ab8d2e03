#!/usr/bin/env bash
# Runs a command against a throwaway PostgreSQL cluster of its own, and stops that cluster
# afterwards (also when the command fails or is interrupted). Never touches another server.
#   scripts/pg-run.sh [--port N] -- command args...
# initdb into a fresh scratch dir (mktemp -d, owned by user postgres when run as root: the
# server refuses to run as root, so initdb and pg_ctl run through runuser), trust auth,
# listening on 127.0.0.1:$port only (default 5439), its socket inside the scratch dir. The
# server runs with fsync and full_page_writes off (a throwaway cluster: speed, not crash
# safety) unless PG_FSYNC=on (make bench-pg's second run: what a production server pays per
# commit). The command gets ALKSTORE_PG_URL=postgres://postgres@127.0.0.1:$port/postgres (and PG_BIN).
set -euo pipefail

port=5439
case "${PG_FSYNC:-off}" in on|off) ;; *) echo "pg-run: error: PG_FSYNC must be on or off" >&2; exit 2;; esac
if [ "${1:-}" = "--port" ]; then port=$2; shift 2; fi
[ "${1:-}" = "--" ] && shift

scripts_dir=$(cd "$(dirname "$0")" && pwd)
"$scripts_dir/pg-setup.sh"
PG_BIN=$("$scripts_dir/pg-bin.sh")
export PG_BIN

if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "pg-run: error: something already listens on 127.0.0.1:$port; not touching it" >&2
  exit 1
fi

as_pg=()
if [ "$(id -u)" -eq 0 ]; then as_pg=(runuser -u postgres --); fi

dir=$(mktemp -d -t alkstore-pg.XXXXXX)
chmod 755 "$dir"
[ "$(id -u)" -eq 0 ] && chown postgres "$dir"
data="$dir/data"
stop() {
  status=$?
  if [ -f "$data/postmaster.pid" ]; then
    "${as_pg[@]}" "$PG_BIN/pg_ctl" -D "$data" stop -m immediate -w >/dev/null 2>&1 || true
    pid=$(head -1 "$data/postmaster.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
  fi
  rm -rf "$dir"
  exit $status
}
trap stop EXIT INT TERM

"${as_pg[@]}" "$PG_BIN/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1 \
  || "${as_pg[@]}" "$PG_BIN/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 \
  || { echo "pg-run: error: initdb failed; log:" >&2; cat "$dir/initdb.log" >&2; exit 1; }
"${as_pg[@]}" "$PG_BIN/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 30 start \
  -o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir -c max_connections=200 -c fsync=${PG_FSYNC:-off} -c synchronous_commit=off -c full_page_writes=${PG_FSYNC:-off}" >/dev/null \
  || { echo "pg-run: error: the server did not start; log:" >&2; cat "$dir/server.log" >&2; exit 1; }

export ALKSTORE_PG_URL="postgres://postgres@127.0.0.1:$port/postgres"
"$@"
