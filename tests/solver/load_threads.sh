#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# apsolve's load on two threads (solver/dbload.c, LoadJob): test_load_threads
# loads sweep 1 of a Llama sweep with every variant (entries that fit, more
# than the ring's batches hold, and out-of-memory ones with figures) at 1,
# 2, 3 and 8 threads and compares the problems byte for byte.
# Usage: load_threads.sh APPROF TEST_LOAD_THREADS
. "$(dirname "$0")/../lib.sh"
approf=$1 test=$2
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT

"$approf" sweep --db "$w/all.db" --quiet --variants all --model llama --preset llama-3-8b \
  --num-layers 16 --layers 16 --seq-len 32768 --cluster 1x8 --hardware h100-sxm --batch 32 \
  --micro-batches 8 >"$w/out" 2>&1 || fail_with "$w/out" "llama sweep, every variant"
"$test" "$w/all.db" >"$w/out" 2>&1 || fail_with "$w/out" "test_load_threads"
cat "$w/out"
# a sweep without out-of-memory entries: no unfit table at any count
"$approf" sweep --db "$w/fit.db" --quiet --variants alpa --model gpt --preset gpt2-small \
  --cluster 1x8 --hardware h100-sxm --micro-batches 8 >"$w/out" 2>&1 ||
  fail_with "$w/out" "gpt2-small sweep"
"$test" "$w/fit.db" none >"$w/out" 2>&1 || fail_with "$w/out" "test_load_threads, none"
cat "$w/out"
