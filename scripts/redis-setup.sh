#!/usr/bin/env bash
# Installs redis-server and redis-sentinel (Debian packages) for the Redis engine's tests,
# bench, demo and failover figures. Idempotent and quiet when they are there. Installs only as
# root; otherwise says what to install.
set -euo pipefail

have() { command -v redis-server >/dev/null 2>&1 && command -v redis-sentinel >/dev/null 2>&1; }

if have; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "redis-setup: installing redis-server redis-sentinel" >&2
  # The packages' init scripts may try to start a system Redis (on 6379, 26379); the tests never
  # use those, and containers usually refuse the start (policy-rc.d).
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server redis-sentinel >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server redis-sentinel >/dev/null; }
  have && exit 0
fi
echo "redis-setup: error: redis-server or redis-sentinel is missing; install them (Debian/Ubuntu: sudo apt-get install redis-server redis-sentinel), Redis 6.2 or later" >&2
exit 1
