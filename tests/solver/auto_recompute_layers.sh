#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Partial recomputation in the auto search (docs/solver.md, "Partial
# recomputation in the auto search"; solver/session_autorl.c): the small
# GPT of recompute_layers.sh (8 blocks, 1x2 H100, recompute none and
# full), searched under 1F1B. Under a memory budget between the need of
# pp=2 with K = 3 of each stage's 4 layers recomputed and that of K = 2
# (the search keeps 5 % free), no plan without partial recomputation beats
# every layer recomputed, and the auto plan is K = 3: its time and memory
# are exactly --parallel ...,recompute_layers=3's (the same composition),
# Megatron-LM runs it and DeepSpeed and torchtitan do not; stored, --plan
# re-prices it, apreport's memory is apsolve's and the Megatron launch
# file says --recompute-method block --recompute-num-layers 3. Without a
# budget the auto plan recomputes nothing and carries no K. On a 16-block
# GPT, a stored auto plan with a K and unequal stages is re-priced by
# --plan as it was searched (a global batch of micro-batches of 7
# sequences, on which the auto search tries no context parallelism).
# Usage: auto_recompute_layers.sh APPROF APSOLVE PYTHON APREPORT
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3 apreport=$4
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
db=$w/g.db
"$approf" sweep --db "$db" --model gpt --num-layers 8 --hidden 256 --heads 4 --seq-len 512 \
  --vocab 1000 --cluster 1x2 --hardware h100-sxm --batch 16 --micro-batches 4 --layers 8 \
  --memory-levels 1 --recompute none,full --zero 0 --quiet >"$w/out" 2>&1 ||
  fail_with "$w/out" "gpt sweep"
for k in 2 3; do
  "$apsolve" --db "$db" --no-store --format json --schedule 1f1b \
    --parallel "dp=1,tp=1,pp=2,recompute=full,recompute_layers=$k" >"$w/k$k.json" 2>"$w/err" ||
    fail_with "$w/err" "recompute_layers=$k"
done
"$py" - "$w" <<'PY' || fail "the budget"
import json, sys
w = sys.argv[1]
need = {k: max(s["memory_needed"] for s in json.load(open("%s/k%d.json" % (w, k)))["plans"][0]
                                                                          ["stages"])
        for k in (2, 3)}
# K = 3 keeps the 5 % headroom, K = 2 does not fit at all
lo, hi = need[3] / 0.95, need[2]
assert lo < hi, need
open(w + "/budget", "w").write("%d\n" % ((lo + hi) / 2))
PY
budget=$(cat "$w/budget")
"$apsolve" --db "$db" --format json --schedule 1f1b --memory-budget "$budget" \
  >"$w/auto.json" 2>"$w/auto.err" || fail_with "$w/auto.err" "the auto plan at $budget bytes"
"$py" - "$w" <<'PY' || fail_with "$w/auto.err" "the auto plan's K"
import json, sys
w = sys.argv[1]
p = json.load(open(w + "/auto.json"))
k3 = [x for x in json.load(open(w + "/k3.json"))["plans"] if x["kind"] == "3d"][0]
assert p["feasible"] and p.get("recompute_layers") == 3, p.get("recompute_layers")
assert p["cost"] == k3["cost"], (p["cost"], k3["cost"])
assert [s["memory_needed"] for s in p["stages"]] == [s["memory_needed"] for s in k3["stages"]]
assert all(s["recompute"] == "full" for s in p["stages"]), p["stages"]
assert p["frameworks"]["runs"] == ["megatron"], p["frameworks"]
for f in ("deepspeed", "torchtitan"):
    assert "recompute_layers" in p["frameworks"]["why_not"][f], p["frameworks"]
open(w + "/id", "w").write("%d\n" % p["plan_id"])
PY
grep -q "partial recomputation: K = 3 (the first 3 layers of each chunk)" "$w/auto.err" &&
  grep -q "recompute_layers=3, stage 1 (layers 4-7): the first 3 of 4 layers" "$w/auto.err" ||
  fail_with "$w/auto.err" "the search's lines"
id=$(cat "$w/id")
"$apsolve" --db "$db" --format json --plan "$id" >"$w/plan.json" 2>"$w/err" ||
  fail_with "$w/err" "--plan $id"
"$py" -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
a = a["plans"][0] if "plans" in a else a
b = b["plans"][0] if "plans" in b else b
assert b.get("recompute_layers") == 3 and a["cost"] == b["cost"], (a["cost"], b["cost"])' \
  "$w/auto.json" "$w/plan.json" || fail "--plan $id re-prices it"
mkdir -p "$w/f"
"$apreport" --db "$db" --plan "$id" --name r --out "$w/f" --quiet 2>"$w/err" ||
  fail_with "$w/err" "apreport"
"$py" -c 'import json, sys
a = [s["memory_needed"] for s in json.load(open(sys.argv[1]))["stages"]]
r = [s["memory_needed"] for s in json.load(open(sys.argv[2]))["stages"]]
assert a == r, (a, r)' "$w/auto.json" "$w/f/report.json" || fail "apreport's memory is not apsolve's"
m=$w/f/r_megatron.args
grep -q '^--recompute-method block$' "$m" && grep -q '^--recompute-num-layers 3$' "$m" ||
  fail_with "$m" "Megatron's block recomputation"
# a budget everything fits: no recomputation, no K
"$apsolve" --db "$db" --no-store --format json --schedule 1f1b >"$w/big.json" 2>"$w/err" ||
  fail_with "$w/err" "the auto plan without a budget"
"$py" -c 'import json, sys
p = json.load(open(sys.argv[1]))
assert "recompute_layers" not in p, p.get("recompute_layers")
assert all(s["recompute"] == "none" for s in p["stages"]), p["stages"]' \
  "$w/big.json" || fail "the auto plan without a budget"
# unequal stages: a 16-block GPT on 1x8, the first budget (2.0 .. 3.0 GB)
# whose auto plan takes a K and holds stages of unequal layers; a stage
# of K layers or fewer recomputes all of its own, so --plan re-prices the
# stored plan with the same K and the same time and memory. The global
# batch is 56 in 8 micro-batches of 7 sequences: the cp step needs an even
# micro-batch (session_autocp.c), so the plans searched are the plain
# ones this part is about (at 64 in micro-batches of 8, cp=2 on equal
# stages wins every budget here: the cp stage's transient holds 1/cp of
# its activation-sized part, docs/context-parallel.md)
db=$w/m.db
"$approf" sweep --db "$db" --model gpt --num-layers 16 --hidden 1024 --heads 16 \
  --seq-len 1024 --vocab 32000 --cluster 1x8 --hardware h100-sxm --batch 56 \
  --micro-batches 8 --layers 16 --recompute none,full --quiet >"$w/out" 2>&1 ||
  fail_with "$w/out" "the 16-block sweep"
found=
for b in 20 21 22 23 24 25 26 27 28 29 30; do
  "$apsolve" --db "$db" --format json --schedule 1f1b --memory-budget "${b}00000000" \
    >"$w/u.json" 2>"$w/err" || continue
  if "$py" -c 'import json, sys
p = json.load(open(sys.argv[1]))
sys.exit(not (p.get("recompute_layers") and len({len(s["layers"]) for s in p["stages"]}) > 1))' \
    "$w/u.json"; then
    found=$b
    break
  fi
done
[ -n "$found" ] || fail "no budget of 2.0 .. 3.0 GB gives unequal stages with a K"
id=$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["plan_id"])' "$w/u.json")
"$apsolve" --db "$db" --format json --plan "$id" >"$w/up.json" 2>"$w/err" ||
  fail_with "$w/err" "--plan $id"
"$py" -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
b = b["plans"][0] if "plans" in b else b
assert a["recompute_layers"] == b.get("recompute_layers") and a["cost"] == b["cost"], \
    (a["recompute_layers"], b.get("recompute_layers"), a["cost"], b["cost"])
assert [s["memory_needed"] for s in a["stages"]] == [s["memory_needed"] for s in b["stages"]]' \
  "$w/u.json" "$w/up.json" || fail "--plan $id re-prices the plan of unequal stages"
echo "ok"
