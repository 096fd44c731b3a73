#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Exactness of a sweep change: two approf builds run the same eight sweeps
# (dense, MoE, FP8, memory levels, two hosts; analytic backend, H100 spec)
# and every table of the two databases is compared row for row (sorted rows,
# ISO timestamps removed), with the summary less its time and database lines.
# Prints one line per case, "same" or "DIFFERS: <tables>"; exits 1 when any
# case differs. Figures of speed belong to sweep_scale.sh / full_space_ab.sh.
# Usage: bench/sweep_exact.sh APPROF_A APPROF_B [DIR]
# CASES=quick runs the first four cases only.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 APPROF_A APPROF_B [DIR]" >&2; exit 2; }
a=$1 b=$2
T=${3:-$(mktemp -d)}
mkdir -p "$T"
common=(--backend model --hardware h100-sxm --micro-batches 8)
cases=(
  "8b-alpa|--model llama --preset llama-3-8b --cluster 1x8 --variants alpa"
  "8b-all|--model llama --preset llama-3-8b --cluster 1x8 --variants all"
  "8b-fp8|--model llama --preset llama-3-8b --cluster 1x8 --variants all --fp8"
  "gpt2-all|--model gpt --preset gpt2-small --cluster 1x8 --variants all"
  "8b-levels3|--model llama --preset llama-3-8b --cluster 1x8 --variants alpa --memory-levels 3"
  "8b-2x8|--model llama --preset llama-3-8b --cluster 2x8 --variants all"
  "70b-16L|--model llama --preset llama-3-70b --layers 16 --cluster 8x8 --variants all"
  "mixtral-4L|--model mixtral --preset mixtral-8x7b --layers 4 --cluster 8x8 --variants all"
)
[ "${CASES:-all}" = quick ] && cases=("${cases[@]:0:4}")
# the database's content: per table the md5 of its sorted rows, timestamps out
digest() {
  local db=$1 t
  for t in $(sqlite3 "$db" "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"); do
    printf '%s %s\n' "$t" "$(sqlite3 "$db" "SELECT * FROM \"$t\"" |
      sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z?//g' |
      LC_ALL=C sort | md5sum | cut -c1-32)"
  done
}
bad=0
for c in "${cases[@]}"; do
  tag=${c%%|*}
  read -r -a args <<<"${c#*|}"
  for x in a b; do
    [ $x = a ] && bin=$a || bin=$b
    rm -f "$T/$tag-$x.db"
    "$bin" sweep "${args[@]}" "${common[@]}" --db "$T/$tag-$x.db" >"$T/$tag-$x.out" 2>"$T/$tag-$x.err"
    echo "exit $?" >>"$T/$tag-$x.out"
    grep -v -i -E 'seconds|[0-9.]+ ?m?s\b|database|wrote|elapsed' "$T/$tag-$x.out" >"$T/$tag-$x.sum"
    digest "$T/$tag-$x.db" >"$T/$tag-$x.md5"
  done
  diffs=$(join "$T/$tag-a.md5" "$T/$tag-b.md5" -a1 -a2 | awk '$2 != $3 { print $1 }' | tr '\n' ' ')
  cmp -s "$T/$tag-a.sum" "$T/$tag-b.sum" || diffs="$diffs summary"
  if [ -z "$diffs" ]; then
    echo "$tag: same ($(wc -l <"$T/$tag-a.md5") tables)"
  else
    echo "$tag: DIFFERS: $diffs"
    bad=1
  fi
done
exit $bad
