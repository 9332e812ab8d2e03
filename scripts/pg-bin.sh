#!/usr/bin/env bash
# Prints the directory of PostgreSQL's server binaries (initdb, pg_ctl, postgres): $PG_BIN if
# set, else the newest /usr/lib/postgresql/<version>/bin (Debian's layout), else the directory
# of an initdb on the PATH. Exits 1 when there is none.
set -euo pipefail

if [ -n "${PG_BIN:-}" ] && [ -x "$PG_BIN/initdb" ]; then echo "$PG_BIN"; exit 0; fi
for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -n -r); do
  if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then echo "$dir"; exit 0; fi
done
if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; exit 0; fi
exit 1
