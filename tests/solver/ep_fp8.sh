#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# An ep stage under FP8 (docs/expert-parallel.md, "How a stage is priced",
# item 2, memory): the stage program keeps Transformer Engine's FP8 copies
# of the experts' weights beside them (profiler/sharding/program_fp8.c,
# shard_fp8_weights: a row-wise and a column-wise copy of 1 byte an element
# on Hopper), so the ep stage, which keeps 1/ep of the expert weights,
# keeps 1/ep of those copies too. Counted by hand on the small Mixtral of
# solver-expert-parallel (2 blocks of 8 experts, hidden 256, expert FFN
# 14336: 176,160,768 expert weight elements, 88,080,384 of them a GPU at
# ep=2) swept on 1x4 H100 with --fp8-recipe tensorwise:
# - 16-bit weights: each element ep=2 leaves saves its bf16 weight (2),
#   bf16 gradient (2), the two FP8 copies (2) and Adam's 12: 18 bytes;
# - FP8 primary weights (the spec's fp8_param_gather = 1): the copies are
#   the weight, no bf16 copy: 2 + 2 + 12 = 16 bytes.
# Before the copies were divided, both were 16.
# Usage: ep_fp8.sh APPROF APSOLVE PYTHON
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
mix="--model mixtral --num-layers 2 --hidden 256 --heads 4 --seq-len 128 --vocab 1000"
"$approf" hardware show h100-sxm | sed 's/^fp8_param_gather = 0$/fp8_param_gather = 1/' \
  >"$w/pg.spec" || fail "hardware show"
grep -q '^fp8_param_gather = 1$' "$w/pg.spec" || fail "no fp8_param_gather field to set"
for hw in h100-sxm "$w/pg.spec"; do
  case $hw in h100-sxm) tag=bf16 want=18 ;; *) tag=pg want=16 ;; esac
  db=$w/$tag.db
  # shellcheck disable=SC2086
  "$approf" sweep --db "$db" $mix --cluster 1x4 --hardware "$hw" --batch 16 \
    --micro-batches 4 --layers 2 --fp8-recipe tensorwise >"$w/out" 2>&1 ||
    fail_with "$w/out" "mixtral fp8 sweep ($tag)"
  "$apsolve" --db "$db" --no-store --format json --parallel dp=4,tp=1,pp=1 \
    >"$w/plain.json" 2>"$w/err" || fail_with "$w/err" "plain dp=4 ($tag)"
  "$apsolve" --db "$db" --no-store --format json --parallel dp=4,tp=1,pp=1,ep=2 \
    >"$w/ep.json" 2>"$w/err" || fail_with "$w/err" "dp=4,ep=2 ($tag)"
  if [ "$tag" = bf16 ]; then
    grep -q "memory -528482304 bytes on the peak (with Transformer Engine's FP8 copies: +2 bytes an expert element), -1056964608 in the initial state" "$w/err" ||
      fail_with "$w/err" "the FP8 copies in apsolve's ep line"
  else
    grep -q "FP8 copies" "$w/err" && fail_with "$w/err" "FP8 primary weights: no copies beyond the weight"
  fi
  "$py" - "$w/plain.json" "$w/ep.json" "$want" <<'PY' || fail "ep=2 memory under FP8 ($tag)"
import json, sys
plain = json.load(open(sys.argv[1]))["plans"][0]["stages"][0]
ep = json.load(open(sys.argv[2]))["plans"][0]["stages"][0]
half = 2 * 3 * 8 * 256 * 14336 // 2
assert half == 88080384
assert plain["in_flight"] == ep["in_flight"] == 1
got = plain["memory_needed"] - ep["memory_needed"]
assert got == int(sys.argv[3]) * half, (got, int(sys.argv[3]) * half)
print("ep=2 under FP8: memory -%d bytes = %s x %d" % (got, sys.argv[3], half))
PY
done
echo "ok: ep under FP8 divides the experts' FP8 copies (18 and 16 bytes an element)"
