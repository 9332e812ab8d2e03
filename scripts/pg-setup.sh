#!/usr/bin/env bash
# Installs PostgreSQL (Debian's `postgresql` package) and PgBouncer (`pgbouncer`, which the
# pooler tests start in front of the test cluster) for the PostgreSQL engine's tests, bench
# and demo. Idempotent and quiet when they are there. Installs only as root; otherwise says
# what to install. Prints nothing on success; scripts/pg-bin.sh finds the binaries.
set -euo pipefail

scripts_dir=$(cd "$(dirname "$0")" && pwd)
have() { "$scripts_dir/pg-bin.sh" >/dev/null 2>&1 && command -v pgbouncer >/dev/null 2>&1; }
if have; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "pg-setup: installing postgresql pgbouncer" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql pgbouncer >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql pgbouncer >/dev/null; }
  have && exit 0
fi
echo "pg-setup: error: PostgreSQL's server binaries (initdb, pg_ctl, postgres) or pgbouncer are missing; install them (Debian/Ubuntu: sudo apt-get install postgresql pgbouncer), PostgreSQL 13 or later" >&2
exit 1
