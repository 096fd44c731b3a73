#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The auto search's activation-offload candidates as one-layer problems
# (solver/offload_one_stage.h): test_offload_view checks on made-up tables,
# and on a small GPT's sweep (every variant, 1x4 H100) at several memory
# budgets, that each N's plan on the one-layer problem is the whole table's.
# Usage: offload_view.sh APPROF TEST_OFFLOAD_VIEW
. "$(dirname "$0")/../lib.sh"
approf=$1 test=$2
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
"$approf" sweep --db "$w/g.db" --quiet --model gpt --num-layers 4 --hidden 256 --heads 4 \
  --seq-len 128 --vocab 1000 --cluster 1x4 --hardware h100-sxm --batch 8 --micro-batches 2 \
  --layers 4 --variants all >"$w/out" 2>&1 || fail_with "$w/out" "gpt sweep"
"$test" "$w/g.db" >"$w/out" 2>&1 || fail_with "$w/out" "test_offload_view"
cat "$w/out"
