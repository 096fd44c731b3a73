#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Exactness of an apsolve change: two apsolve builds on the same databases
# under several options (schedules, objective, threads, memory budgets); per
# pair the JSON less solve_seconds, stderr less the timings it states, and
# the exit status are compared. One line per pair, "same (exit N)" or
# "DIFFERS"; exits 1 when any pair differs. Speed figures belong to
# apsolve_ab.sh.
# Usage: bench/apsolve_exact.sh APSOLVE_A APSOLVE_B DB...
# OPTS overrides the option sets (one set per line).
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: $0 APSOLVE_A APSOLVE_B DB..." >&2; exit 2; }
a=$1 b=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
opts=${OPTS:-"
--objective full
--schedule interleaved
--threads 2
--memory-budget 20G
--schedule zbv
--schedule 1f1b --memory-budget 30G"}
out() { # bin db opts...: the output less what differs run to run
  local bin=$1 db=$2 rc
  shift 2
  "$bin" --db "$db" --no-store --format json "$@" >"$tmp/json" 2>"$tmp/err"
  rc=$?
  sed 's/"solve_seconds": [0-9.e+-]*//g' "$tmp/json"
  sed -E -e 's/(solved )?in [0-9.]+ m{0,1}s/in T/g' -e 's/own DP [0-9.]+ ms/own DP T/' "$tmp/err"
  echo "exit $rc"
}
bad=0
for db in "$@"; do
  while IFS= read -r o; do
    read -r -a args <<<"$o"
    out "$a" "$db" "${args[@]}" >"$tmp/a"
    out "$b" "$db" "${args[@]}" >"$tmp/b"
    if cmp -s "$tmp/a" "$tmp/b"; then
      echo "$(basename "$db") [${o:-default}]: same ($(tail -1 "$tmp/a"))"
    else
      echo "$(basename "$db") [${o:-default}]: DIFFERS"
      diff "$tmp/a" "$tmp/b" | head -5
      bad=1
    fi
  done <<<"$opts"
done
exit $bad
