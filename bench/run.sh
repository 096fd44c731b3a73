#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prints the speed and memory figures the issues set targets for, each next
# to a baseline measured in the same run. Never fails on a time: it prints.
# Usage: bench/run.sh [BUILD_DIR]   (default: build; built if needed)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
[ -d "$dir" ] || meson setup "$dir" --buildtype=release >/dev/null
ninja -C "$dir" >/dev/null
approf=$dir/profiler/cli/approf
apsolve=$dir/solver/apsolve
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

seconds() { # seconds of wall time of a command, output discarded
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}
peak_mb() { # peak resident memory of a command in MB (GNU time)
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f '%M' "$@" 2>&1 >/dev/null | tail -1 | awk '{printf "%.1f", $1/1024}'
  else
    echo n/a
  fi
}

echo "== approf sweep (analytic backend) =="
common=(sweep --model resnet50 --layers 16 --cluster 2x4 --batch 64 --micro-batches 16
        --hardware a100-40g --backend model --quiet)
sp=$(seconds "$approf" "${common[@]}" --db "$tmp/r1.db")
cbc=$(seconds "$approf" "${common[@]}" --db "$tmp/r2.db" --sharding-solver cbc)
echo "resnet50 16 layers 2x4, B=64, 16 micro-batches: ${sp} s (target < 5 s)"
echo "  baseline, every residual ILP through CBC (--sharding-solver cbc): ${cbc} s"
echo "  Alpa (docs/alpa-semantics.md): 1440 s of stage construction for a 16-layer Wide-ResNet"
# --workers: the same sweep with 1 and 2 profiling threads (best of 3 each);
# the main thread alone writes, so the analytic backend's gain is bounded by
# the writing time, which the summary line of a sweep shows
best3() { # best of 3 wall times of a sweep; $1 names the database
  local db=$1 best= t; shift
  for _ in 1 2 3; do
    rm -f "$db"
    t=$(seconds "$@" --db "$db")
    best=$(awk -v a="$t" -v b="${best:-$t}" 'BEGIN { printf "%.3f", (a < b ? a : b) }')
  done
  echo "$best"
}
w1=$(best3 "$tmp/w1.db" "$approf" "${common[@]}" --workers 1)
w2=$(best3 "$tmp/w2.db" "$approf" "${common[@]}" --workers 2)
echo "resnet50 16 layers 2x4, --workers 1 vs 2 ($(nproc) cores): ${w1} s | ${w2} s" \
  "($(awk -v a="$w1" -v b="$w2" 'BEGIN { printf "%.2fx", (b > 0 ? a / b : 0) }'))"
g=$(seconds "$approf" sweep --model gpt --preset gpt3-39b --layers 32 --cluster 8x8 \
      --hardware a100-80g --backend model --quiet --variants all --db "$tmp/g.db")
gp=$(seconds "$approf" sweep --model gpt --preset gpt3-39b --layers 32 --cluster 8x8 \
      --hardware a100-80g --backend model --quiet --variants alpa --db "$tmp/gp.db")
db_mb() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.1f", b / 1048576 }'; }
echo "gpt3-39b 32 layers 8x8, stage variants (--variants all): ${g} s, database $(db_mb "$tmp/g.db") MB"
echo "  baseline, Alpa's plain space (--variants alpa): ${gp} s, database $(db_mb "$tmp/gp.db") MB"

echo
# llama-3-70b (80 transformer layers clustered into 32), 8x8 A100-80GB, bf16
lt=$( { /usr/bin/time -f '%e' "$approf" model show llama --preset llama-3-70b --layers 32 \
        >/dev/null; } 2>&1 | tail -1 )
l1=$(seconds "$approf" sweep --model llama --preset llama-3-70b --layers 32 --cluster 8x8 \
       --dtype bf16 --hardware a100-80g --backend model --quiet --variants alpa --db "$tmp/l1.db")
l3=$(seconds "$approf" sweep --model llama --preset llama-3-70b --layers 32 --cluster 8x8 \
       --dtype bf16 --hardware a100-80g --backend model --quiet --memory-levels 3 --db "$tmp/l3.db")
echo "llama-3-70b, 80 layers clustered to 32: build + layers ${lt} s; sweep on 8x8 a100-80g:" \
  "${l1} s (plain), ${l3} s (--memory-levels 3, $(db_mb "$tmp/l3.db") MB)"

bench/sweep_scale.sh "$dir"

echo
echo "== apsolve =="
s1=$(seconds "$apsolve" --db "$tmp/r1.db" --no-store)
echo "apsolve on the resnet50 sweep above (whole command): ${s1} s"
echo "apsolve peak memory on the gpt3-39b 8x8 sweep: $(peak_mb "$apsolve" --db "$tmp/g.db" --no-store) MB (target < 100 MB)"
"$dir/bench/bench_dp" 3

echo
echo "== layer construction =="
"$dir/bench/bench_layers"

echo
echo "== sharding pass alone =="
"$dir/bench/bench_sharding"
