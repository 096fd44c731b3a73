#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The auto search is monotone in the memory budget: a plan that fits a
# budget fits every larger one, so the auto plan's total_cost never grows
# with it. A 16-block GPT (hidden 1024, sequence 1024) on 1x8 H100, global
# batch 64 in micro-batches of 8, recompute none and full, 1F1B, budgets
# 2.0 .. 3.4 GB in steps of 0.1 GB: context parallelism wins most of them.
# The cp and ep steps solve each layout's plans of equal stages (Megatron-LM
# runs num_layers / pp layers on each; solver/session_autocp.c,
# solve_equal); they once dropped a layout's best plan when its stages were
# unequal, so a budget that let an uneven cp plan fit lost the layout's even
# ones with it (at 2.7 GB cp=2 on 8 + 8 layers, 0.1131 s, after 0.0995 s on
# 4 x 4 at 2.6 GB). Every cp plan holds equal stages, and --threads 1 gives
# the same plan as the default (the parallel cp speculation,
# session_cpspec.c).
# Usage: auto_cp_monotone.sh APPROF APSOLVE PYTHON
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
db=$w/m.db
"$approf" sweep --db "$db" --model gpt --num-layers 16 --hidden 1024 --heads 16 \
  --seq-len 1024 --vocab 32000 --cluster 1x8 --hardware h100-sxm --batch 64 \
  --micro-batches 8 --layers 16 --recompute none,full --quiet >"$w/out" 2>&1 ||
  fail_with "$w/out" "the sweep"
for b in 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34; do
  for t in 1 0; do
    "$apsolve" --db "$db" --no-store --format json --schedule 1f1b --quiet \
      --memory-budget "${b}00000000" $([ "$t" = 1 ] && echo "--threads 1") \
      >"$w/b$b.t$t.json" 2>"$w/err" || fail_with "$w/err" "apsolve at ${b}00000000 bytes"
  done
done
"$py" - "$w" <<'PY' || fail "the auto plan's total_cost against the budget"
import json, sys
w = sys.argv[1]
last, cps = None, 0
for b in range(20, 35):
    p, q = (json.load(open("%s/b%d.t%d.json" % (w, b, t))) for t in (1, 0))
    assert p["feasible"], (b, p)
    assert p["total_cost"] == q["total_cost"] and p.get("cp") == q.get("cp"), (b, p, q)
    if p.get("cp", 1) > 1:
        cps += 1
        assert len({len(s["layers"]) for s in p["stages"]}) == 1, (b, p["stages"])
    assert last is None or p["total_cost"] <= last[1], ("budget %d00000000" % b,
                                                       p["total_cost"], "after", last)
    last = (b, p["total_cost"])
assert cps >= 8, cps  # the cp step is what this tests
PY
echo "ok"
