#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The auto search's cp candidates as subsets of the sweep's pairs
# (solver/problem_subset.h): on a long-sequence Llama where cp wins (as in
# auto_cp.sh), test_cp_view checks that each cp candidate's and each
# layout's plan on the subset is the plan on the whole table with the other
# pairs +inf, and that the sweep's own rows are untouched by the cp step.
# Usage: cp_view.sh APPROF TEST_CP_VIEW
. "$(dirname "$0")/../lib.sh"
approf=$1 test=$2
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT

"$approf" sweep --db "$w/long.db" --quiet --model llama --preset llama-3-8b --num-layers 8 \
  --layers 4 --seq-len 32768 --cluster 1x8 --hardware h100-sxm --batch 16 --micro-batches 2 \
  --variants all >"$w/out" 2>&1 || fail_with "$w/out" "long llama sweep"
"$test" "$w/long.db" 8 >"$w/out" 2>&1 || fail_with "$w/out" "test_cp_view"
cat "$w/out"

# a small Mixtral (as auto_ep.sh's, where cp and ep win): its ep candidates too
"$approf" sweep --db "$w/moe.db" --quiet --model mixtral --preset mixtral-8x7b --num-layers 2 \
  --layers 2 --seq-len 512 --cluster 1x4 --hardware h100-sxm --batch 16 --micro-batches 4 \
  --logical-space data_parallel_only >"$w/out" 2>&1 || fail_with "$w/out" "mixtral sweep"
"$test" "$w/moe.db" 4 >"$w/out" 2>&1 || fail_with "$w/out" "test_cp_view on the Mixtral"
grep -q "^ok: [0-9]* ep candidates" "$w/out" || fail_with "$w/out" "no ep candidate checked"
cat "$w/out"
