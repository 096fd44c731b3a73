#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Two apsolve builds on the same databases, alternating A, B, A, B (the
# steadier comparison on a shared machine): per database the medians of N
# runs of `apsolve --db DB --no-store --format json` (processor time, user +
# system, with each run's figure; wall time; peak RSS), and whether the two
# print the same JSON (less solve_seconds) and the same stderr (less the
# timings it states). Printed, never asserted (docs/performance.md).
# Usage: bench/apsolve_ab.sh APSOLVE_A APSOLVE_B N DB...
set -uo pipefail
[ $# -ge 4 ] || { echo "usage: $0 APSOLVE_A APSOLVE_B N DB..." >&2; exit 2; }
a=$1 b=$2 n=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
med() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# the output less what differs run to run: solve_seconds and "in N s|ms"
out() {
  "$1" --db "$2" --no-store --format json 2>"$tmp/err" |
    sed 's/"solve_seconds": [0-9.e+-]*//g'
  sed -e 's/in [0-9.]* m\{0,1\}s/in T/g' -e 's/own DP [0-9.]* ms/own DP T/' "$tmp/err"
}
for db in "$@"; do
  : >"$tmp/runs"
  for ((k = 0; k < n; k++)); do
    for x in A B; do
      [ $x = A ] && bin=$a || bin=$b
      /usr/bin/time -o "$tmp/t" -f '%U %S %e %M' "$bin" --db "$db" --no-store --format json \
        >/dev/null 2>&1
      awk -v x=$x '{ printf "%s %.2f %.2f %d\n", x, $1 + $2, $3, $4 / 1024 }' "$tmp/t" >>"$tmp/runs"
    done
  done
  for x in A B; do
    printf '%s %s: cpu %s s (%s), wall %s s, peak RSS %s MB\n' "$(basename "$db")" $x \
      "$(awk -v x=$x '$1 == x { print $2 }' "$tmp/runs" | med)" \
      "$(awk -v x=$x '$1 == x { printf "%s%s", s, $2; s = " " }' "$tmp/runs")" \
      "$(awk -v x=$x '$1 == x { print $3 }' "$tmp/runs" | med)" \
      "$(awk -v x=$x '$1 == x { print $4 }' "$tmp/runs" | med)"
  done
  if [ "$(out "$a" "$db")" = "$(out "$b" "$db")" ]; then
    echo "$(basename "$db"): the same output"
  else
    echo "$(basename "$db"): OUTPUTS DIFFER"
  fi
done
