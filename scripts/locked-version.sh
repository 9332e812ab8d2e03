#!/usr/bin/env bash
# Prints the version of package $1 as pinned in Cargo.lock.
set -euo pipefail
cd "$(dirname "$0")/.."
awk -v name="$1" '
  $0 == "name = \"" name "\"" { found = 1; next }
  found && /^version = / { gsub(/"/, "", $3); print $3; exit }
' Cargo.lock
