#!/usr/bin/env bash
# Installs redis-server (Debian package) for the Redis engine's tests, bench and demo.
# Idempotent and quiet when it is there. Installs only as root; otherwise says what to install.
set -euo pipefail

if command -v redis-server >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "redis-setup: installing redis-server" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server >/dev/null; }
  command -v redis-server >/dev/null 2>&1 && exit 0
fi
echo "redis-setup: error: redis-server is missing; install it (Debian/Ubuntu: sudo apt-get install redis-server), Redis 6.2 or later" >&2
exit 1
