#!/usr/bin/env bash
# Runs one package's tests from a shared build of several packages' tests, as `cargo test -p
# <package>` would run them: the library's unit tests, then each binary's, then each
# integration test (by name), from the package's directory, the arguments after `--` given to
# each binary.
#
# Why not `cargo test -p <package>`: cargo resolves dependency features for the packages a
# command names, so `-p alkstore-redis`, `-p alkstore-pg`, `-p alkstore-sqlite`, `-p alkstore-cli`
# one after the other got different tokio, syn, redis, ... and different builds of the
# workspace's own crates under them: a cold `make test` built those up to five times.
# `make build-test-engines` builds the tests of a set of packages (TEST_PKGS: the Makefile's
# ENGINE_PKGS or TOOL_PKGS) in one `cargo test --no-run`; this script asks that same command
# (nothing left to build) where the binaries are. Their doctests run in `make test-engine-docs`.
#
# Every binary runs even when one fails; the script then fails, naming them. It fails too when
# the package has no test binary (a wrong name, or TEST_PKGS without it).
# Usage: TEST_PKGS="-p a -p b" scripts/engine-tests.sh <package> [--test <name>]... [-- <args>]
#        TEST_PKGS="-p a -p b" scripts/engine-tests.sh <package> --bin <name>
#          (prints the path of the package's binary <name>, as built for its tests, and exits)
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "engine-tests: error: $*" >&2; exit 2; }
[ -n "${TEST_PKGS:-}" ] || die "TEST_PKGS is not set (the Makefile sets it: make test-redis, test-pg, ...)"
[ $# -ge 1 ] || die "usage: scripts/engine-tests.sh <package> [--test <name>]... [--bin <name>] [-- <args>]"
package=$1
shift
only=() bin= args=()
while [ $# -gt 0 ]; do
  case $1 in
    --test) only+=("$2"); shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --) shift; args=("$@"); break ;;
    *) die "unknown argument '$1'" ;;
  esac
done
# shellcheck disable=SC2086 # TEST_PKGS is a list of words
messages=$(${CARGO:-cargo} test -q --no-run $TEST_PKGS --message-format=json) || die "the tests of $TEST_PKGS do not build"

# Cargo's JSON messages (one object a line; the documented format): the artifacts with an
# executable. Each becomes "<order> <kind> <name> <test|plain> <dir> <path>".
re_manifest='"manifest_path":"([^"]*)/Cargo.toml"'
re_package='"package_id":"[^"]*[#/]([A-Za-z0-9_-]+)@[^"]*"'
re_kind='"target":\{"kind":\["([a-z-]+)"\]'
re_name='"target":\{[^}]*"name":"([^"]*)"'
re_test='"profile":\{[^}]*"test":true\}'
re_exe='"executable":"([^"]*)"'
found=()
while IFS= read -r line; do
  [[ $line =~ $re_exe ]] || continue
  exe=${BASH_REMATCH[1]}
  [[ $line =~ $re_package ]] && [ "${BASH_REMATCH[1]}" = "$package" ] || continue
  [[ $line =~ $re_manifest ]] || die "no manifest_path in: $line"
  dir=${BASH_REMATCH[1]}
  [[ $line =~ $re_kind ]] || die "no target kind in: $line"
  kind=${BASH_REMATCH[1]}
  [[ $line =~ $re_name ]] || die "no target name in: $line"
  name=${BASH_REMATCH[1]}
  mode=plain
  [[ $line =~ $re_test ]] && mode=test
  case $kind in lib) order=1 ;; bin) order=2 ;; test) order=3 ;; *) order=4 ;; esac
  found+=("$order $kind $name $mode $dir $exe")
done <<<"$messages"

if [ -n "$bin" ]; then
  for f in "${found[@]}"; do
    read -r _ kind name mode _ exe <<<"$f"
    if [ "$kind" = bin ] && [ "$name" = "$bin" ] && [ "$mode" = plain ]; then echo "$exe"; exit 0; fi
  done
  die "$package has no binary '$bin' in the build of $TEST_PKGS"
fi

# Each --test name must be one of the package's integration tests (cargo refuses a typo too).
for t in "${only[@]}"; do
  printf '%s\n' "${found[@]}" | grep -q "^3 test $t test " || die "$package has no integration test '$t'"
done
# The list on descriptor 3: the binaries get this script's standard input, as under cargo,
# and a test that reads its stdin cannot eat the rest of the list.
failed=() ran=0
while read -r -u 3 _ kind name mode dir exe; do
  [ "$mode" = test ] || continue
  if [ ${#only[@]} -gt 0 ]; then
    [ "$kind" = test ] && [[ " ${only[*]} " == *" $name "* ]] || continue
  fi
  echo "     Running $kind $name ($exe)"
  ran=$((ran + 1))
  (cd "$dir" && "$exe" "${args[@]}") || failed+=("$kind $name")
done 3< <(printf '%s\n' "${found[@]}" | sort -k1,1n -k3,3)

[ "$ran" -gt 0 ] || die "no test binary of $package${only:+ named ${only[*]}} in the build of $TEST_PKGS"
if [ ${#failed[@]} -gt 0 ]; then
  echo "engine-tests: $package: ${#failed[@]} of $ran test binaries failed: ${failed[*]}" >&2
  exit 101
fi
echo "engine-tests: $package: $ran test binaries passed"
