#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Activation offload in the auto search (docs/solver.md, "Activation
# offload in the auto search"; solver/session_autooffload.c): the small
# GPT of activation_offload.sh (4 blocks, recompute none) on 1x1 H100
# whose spec gives a 2 GB/s host link. Under a memory budget below the
# plain plan's need and that of offload=1, but where offload=2 keeps the
# 5 % headroom, no plan fits without offload and the auto plan is one
# stage with offload=2: its time and memory are exactly --parallel
# dp=1,tp=1,pp=1,offload=2's (the same composition), Megatron-LM runs it
# and DeepSpeed and torchtitan do not; stored, --plan re-prices it,
# apreport's memory is apsolve's and the Megatron launch file says
# --cpu-offloading-num-layers 2. Without a budget the auto plan offloads
# nothing.
# Usage: auto_offload.sh APPROF APSOLVE PYTHON APREPORT
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3 apreport=$4
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
"$approf" hardware show h100-sxm >"$w/h100.spec" || fail "hardware show"
sed -e 's/^name *=.*/name = h100-slow-host/' \
    -e 's/^host_link_bandwidth_gbs *=.*/host_link_bandwidth_gbs = 2/' "$w/h100.spec" >"$w/slow.spec"
grep -q '^host_link_bandwidth_gbs = 2$' "$w/slow.spec" || fail "the spec has no host link field"
db=$w/g.db
"$approf" sweep --db "$db" --model gpt --num-layers 4 --hidden 256 --heads 4 --seq-len 128 \
  --vocab 1000 --cluster 1x1 --hardware "$w/slow.spec" --batch 8 --micro-batches 2 --layers 4 \
  --memory-levels 1 --recompute none --quiet >"$w/out" 2>&1 || fail_with "$w/out" "sweep"
for n in 0 1 2; do
  k=
  [ "$n" = 0 ] || k=",offload=$n"
  "$apsolve" --db "$db" --no-store --format json --parallel "dp=1,tp=1,pp=1$k" \
    >"$w/o$n.json" 2>"$w/err" || fail_with "$w/err" "--parallel ...$k"
done
"$py" - "$w" <<'PY' || fail "the budget"
import json, sys
w = sys.argv[1]
need = [json.load(open("%s/o%d.json" % (w, n)))["plans"][0]["stages"][0]["memory_needed"]
        for n in (0, 1, 2)]
# offload=2 keeps the 5 % headroom; offload=1 and the plain plan do not fit
lo, hi = need[2] / 0.95, need[1]
assert lo < hi < need[0], need
open(w + "/budget", "w").write("%d\n" % ((lo + hi) / 2))
PY
budget=$(cat "$w/budget")
"$apsolve" --db "$db" --no-store --parallel dp=1,tp=1,pp=1 --memory-budget "$budget" \
  >"$w/out" 2>"$w/err"
expect_rc 3 $? "$w/err" "without offload the plan does not fit $budget bytes"
"$apsolve" --db "$db" --format json --memory-budget "$budget" \
  >"$w/auto.json" 2>"$w/auto.err" || fail_with "$w/auto.err" "the auto plan at $budget bytes"
"$py" - "$w" <<'PY' || fail_with "$w/auto.err" "the auto plan's offload"
import json, sys
w = sys.argv[1]
p = json.load(open(w + "/auto.json"))
o2 = json.load(open(w + "/o2.json"))["plans"][0]
assert p["feasible"] and p.get("offload", {}).get("layers") == 2, p.get("offload")
assert p["offload"] == o2["offload"], (p["offload"], o2["offload"])
assert p["cost"] == o2["cost"], (p["cost"], o2["cost"])
assert len(p["stages"]) == 1, p["stages"]
assert [s["memory_needed"] for s in p["stages"]] == [s["memory_needed"] for s in o2["stages"]]
assert p["frameworks"]["runs"] == ["megatron"], p["frameworks"]
for f in ("deepspeed", "torchtitan"):
    assert "offload=2" in p["frameworks"]["why_not"][f], p["frameworks"]
open(w + "/id", "w").write("%d\n" % p["plan_id"])
PY
grep -q "activation offload: N = 2: objective .* (no plan fits without it)" "$w/auto.err" &&
  grep -q "activation offload, stage 0 (layers 0-3): the first 2 of 4 layers" "$w/auto.err" ||
  fail_with "$w/auto.err" "the search's lines"
id=$(cat "$w/id")
"$apsolve" --db "$db" --no-store --format json --plan "$id" >"$w/plan.json" 2>"$w/err" ||
  fail_with "$w/err" "--plan $id"
"$py" -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
b = b["plans"][0] if "plans" in b else b
assert b.get("offload") == a["offload"] and a["cost"] == b["cost"], (a["cost"], b["cost"])' \
  "$w/auto.json" "$w/plan.json" || fail "--plan $id re-prices it"
mkdir -p "$w/f"
"$apreport" --db "$db" --plan "$id" --name r --out "$w/f" --quiet 2>"$w/err" ||
  fail_with "$w/err" "apreport"
"$py" -c 'import json, sys
a = [s["memory_needed"] for s in json.load(open(sys.argv[1]))["stages"]]
r = [s["memory_needed"] for s in json.load(open(sys.argv[2]))["stages"]]
assert a == r, (a, r)' "$w/auto.json" "$w/f/report.json" || fail "apreport's memory is not apsolve's"
m=$w/f/r_megatron.args
grep -q '^--cpu-offloading-num-layers 2$' "$m" && grep -q '^--pipeline-model-parallel-size 1$' "$m" ||
  fail_with "$m" "Megatron's offload flag"
# no budget: the plan without offload is the fastest
"$apsolve" --db "$db" --no-store --format json >"$w/big.json" 2>"$w/err" ||
  fail_with "$w/err" "the auto plan without a budget"
"$py" -c 'import json, sys
p, o0 = (json.load(open(f)) for f in sys.argv[1:3])
assert "offload" not in p, p.get("offload")
assert p["cost"] == o0["plans"][0]["cost"], (p["cost"], o0["plans"][0]["cost"])' \
  "$w/big.json" "$w/o0.json" || fail "the auto plan without a budget"
grep -q "none beats the plan without it" "$w/err" || fail_with "$w/err" "the search's line"
echo "auto offload: ok"
