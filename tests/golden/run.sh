#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The golden-output runner (curl's tests/data layout, one directory a
# case): tests/golden/cases/NAME/ holds
#   cmd      a bash fragment, run in a fresh work directory, whose standard
#            output is the case's output; it names the programs through
#            $APPROF $APSOLVE $SQLITE3 $MKDB $MKHW and the test data through
#            $TESTS (the tests/ directory of the source tree)
#   stdout   the expected output, byte for byte
#   filter   optional: a sed script applied to the output first (for
#            values that differ from run to run, such as a stored plan id)
# A case passes when its cmd exits 0 and the filtered output equals stdout.
# Usage: run.sh [--update] CASES_DIR WORK_DIR [NAME=VALUE ...]
#   NAME=VALUE pairs become the environment of every cmd (APPROF=...).
#   --update rewrites each case's stdout with what the command printed
#   (review the diff before committing it).
set -u
update=0
if [ "${1:-}" = --update ]; then update=1; shift; fi
. "$(dirname "$0")/../lib.sh"
cases=$(realpath "$1") || fail "no cases directory $1"
work=$2
shift 2
for kv in "$@"; do  # programs given by a relative path stay found after the cd
  v=${kv#*=}
  [ -e "$v" ] && v=$(realpath "$v")
  export "${kv%%=*}=$v"
done
export TESTS
TESTS=$(cd "$(dirname "$0")/.." && pwd)
fresh_dir "$work"
n=0 failed=0
for dir in "$cases"/*/; do
  dir=${dir%/}
  name=$(basename "$dir")
  [ -f "$dir/cmd" ] || fail "$name: no cmd file"
  [ -f "$dir/stdout" ] || [ $update = 1 ] || fail "$name: no stdout file"
  w="$work/$name"
  mkdir -p "$w"
  if ! (cd "$w" && bash -eo pipefail "$dir/cmd") >"$w/raw" 2>"$w/err"; then
    echo "FAIL: $name: the command failed"; cat "$w/err"; failed=$((failed + 1)); continue
  fi
  not_crashed "$w/err" "$name"
  if [ -f "$dir/filter" ]; then sed -f "$dir/filter" "$w/raw" >"$w/out"; else cp "$w/raw" "$w/out"; fi
  n=$((n + 1))
  if [ $update = 1 ]; then
    cp "$w/out" "$dir/stdout"
  elif ! cmp -s "$w/out" "$dir/stdout"; then
    echo "FAIL: $name: output differs from $dir/stdout"
    diff -u "$dir/stdout" "$w/out" | head -40
    failed=$((failed + 1))
  fi
done
[ $failed = 0 ] || fail "$failed golden case(s) differ"
echo "all $n golden cases match"
