#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# apsolve --parallel ...,recompute=full,recompute_layers=K|auto
# (docs/variants.md, "Partial recomputation"): a small GPT (4 blocks,
# hidden 256, sequence 512) swept on 1x2 H100 with recompute none and
# full, priced as pp=2 with the first layer of each 2-layer stage fully
# recomputed. Against a hand count from the stored entries: the phases
# are layer i under full plus layer i+1 under none; the saved activations
# their sum; the peak that sum plus the larger of the whole stage's two
# variants' peak less their saved activations; the optimizer state and
# the apply step the whole stage's under none. Then a memory budget under
# which recompute none does not fit and auto picks K = 1 (cheaper than
# full); --plan re-prices the stored plan; Megatron's launch file says
# --recompute-method block --recompute-num-layers 1, torchtitan and
# DeepSpeed say they cannot express it.
# Usage: recompute_layers.sh APPROF APSOLVE PYTHON SQLITE3 APREPORT
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3 sq=$4 apreport=$5
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
db=$w/g.db
"$approf" sweep --db "$db" --model gpt --num-layers 4 --hidden 256 --heads 4 --seq-len 512 \
  --vocab 1000 --cluster 1x2 --hardware h100-sxm --batch 16 --micro-batches 2 --layers 4 \
  --memory-levels 1 --recompute none,full --zero 0 --quiet >"$w/out" 2>&1 ||
  fail_with "$w/out" "gpt sweep"
price() { # NAME KNOBS [OPTIONS]: the plan as JSON into $w/NAME.json
  n=$1 k=$2
  shift 2
  "$apsolve" --db "$db" --no-store --format json --parallel "dp=1,tp=1,pp=2,$k" "$@" \
    >"$w/$n.json" 2>"$w/$n.err"
}
price none "recompute=none" || fail_with "$w/none.err" "recompute=none"
price full "recompute=full" || fail_with "$w/full.err" "recompute=full"
price k1 "recompute=full,recompute_layers=1" || fail_with "$w/k1.err" "recompute_layers=1"
"$sq" -separator ' ' "$db" "select start_layer, end_layer, config_index, phase, compute_cost,
  peak_memory, intermediate_size, initial_size, coalesce(apply_cost, -1)
  from stage_profile where submesh_index = 0 and status = 'ok'" >"$w/rows" ||
  fail "the stored entries"
"$sq" -separator ' ' "$db" "select config_index, recompute, coalesce(force_batch_dim, -1)
  from sweep_config where submesh_index = 0" >"$w/configs" || fail "the configs"
"$py" - "$w" <<'PY' || fail "recompute_layers=1 against the hand count"
import json, sys
w = sys.argv[1]
rows = {}
for l in open(w + "/rows"):
    i, j, c, ph, t, peak, inter, init, apply = l.split()
    rows[(int(i), int(j), int(c), int(ph))] = (float(t), int(peak), int(inter), int(init),
                                               float(apply))
configs = {int(c): (r, int(f)) for c, r, f in (l.split() for l in open(w + "/configs"))}
def plan(name):
    return json.load(open("%s/%s.json" % (w, name)))["plans"][0]
def entry(i, j, c):  # as solver/dbload.c reads it: phases, max of the memories
    f, b = rows[(i, j, c, 0)], rows[(i, j, c, 1)]
    return dict(fwd=f[0], bwd=b[0], peak=max(f[1], b[1]), inter=max(f[2], b[2]),
                init=max(f[3], b[3]), apply=f[4] if f[4] >= 0 else b[4])
k1, full = plan("k1"), plan("full")
assert k1.get("recompute_layers") == 1, k1.get("recompute_layers")
assert "recompute_layers" not in full
for st in k1["stages"]:
    i, j, c = st["layers"][0], st["layers"][-1], st["config_index"]
    assert j == i + 1 and configs[c][0] == "full", (i, j, configs[c])
    cn = [o for o, (r, f) in configs.items() if r == "none" and f == configs[c][1]][0]
    a, b = entry(i, i, c), entry(j, j, cn)          # layer i full, layer j none
    wf, wn = entry(i, j, c), entry(i, j, cn)        # the whole stage's two variants
    fwd, bwd = a["fwd"] + b["fwd"], a["bwd"] + b["bwd"]
    inter = a["inter"] + b["inter"]
    peak = inter + max(wf["peak"] - wf["inter"], wn["peak"] - wn["inter"])
    need = peak + wn["init"] + (st["in_flight"] - 1) * inter
    assert abs(st["fwd_cost"] - fwd) <= 1e-12 and abs(st["bwd_cost"] - bwd) <= 1e-12, \
        (st["fwd_cost"], fwd, st["bwd_cost"], bwd)
    assert abs(st["apply_cost"] - wn["apply"]) <= 1e-15, (st["apply_cost"], wn["apply"])
    assert st["memory_needed"] == need, (i, st["memory_needed"], need)
    # between none and full in time, and it keeps less than none
    assert wn["fwd"] + wn["bwd"] < fwd + bwd < wf["fwd"] + wf["bwd"]
assert plan("none")["cost"] < k1["cost"] < full["cost"], (k1["cost"], full["cost"])
need_none = max(s["memory_needed"] for s in plan("none")["stages"])
need_k1 = max(s["memory_needed"] for s in k1["stages"])
assert need_k1 < need_none, (need_k1, need_none)
open(w + "/budget", "w").write("%d\n" % ((need_k1 + need_none) // 2))
PY
budget=$(cat "$w/budget")
# under a budget between the two needs recompute none does not fit and
# auto chooses K = 1, cheaper than every layer recomputed
price nb "recompute=none" --memory-budget "$budget" && fail "recompute=none fits $budget bytes"
price auto "recompute=full,recompute_layers=auto" --memory-budget "$budget" ||
  fail_with "$w/auto.err" "recompute_layers=auto"
"$py" -c 'import json, sys
p = json.load(open(sys.argv[1]))["plans"][0]
k1 = json.load(open(sys.argv[2]))["plans"][0]
assert p["feasible"] and p["recompute_layers"] == 1 and p["cost"] == k1["cost"], p' \
  "$w/auto.json" "$w/k1.json" || fail "auto's choice"
grep -q "recompute_layers=auto: 2 of 2 layers a chunk recomputed" "$w/auto.err" ||
  fail_with "$w/auto.err" "auto's candidates"
# refusals
"$apsolve" --db "$db" --no-store --parallel "dp=1,tp=1,pp=2,recompute_layers=1" \
  >/dev/null 2>"$w/err" && fail "recompute_layers without recompute=full"
grep -q "recompute_layers needs recompute=full" "$w/err" || fail_with "$w/err" "the refusal"
# stored, re-priced by --plan, exported
"$apsolve" --db "$db" --parallel "dp=1,tp=1,pp=2,recompute=full,recompute_layers=1" \
  >"$w/st" 2>&1 || fail_with "$w/st" "store"
id=$(sed -n 's/^Stored as plan \([0-9]*\).*/\1/p' "$w/st")
"$sq" "$db" "select options from plan where id = $id" | grep -q '"recompute_layers": 1' ||
  fail "the stored options"
t1=$(sed -n 's/^Estimated iteration latency: \([^ ]*\) s.*/\1/p' "$w/st" | head -1)
"$apsolve" --db "$db" --plan "$id" >"$w/out2" 2>"$w/err" || fail_with "$w/err" "--plan $id"
t2=$(sed -n 's/^Estimated iteration latency: \([^ ]*\) s.*/\1/p' "$w/out2" | head -1)
[ -n "$t1" ] && [ "$t1" = "$t2" ] || fail "--plan $id: $t2 s, stored $t1 s"
grep -q "^Recomputation: the first 1 layer of each model chunk" "$w/out2" ||
  fail_with "$w/out2" "the text's line"
mkdir -p "$w/f"
"$apreport" --db "$db" --plan "$id" --name r --out "$w/f" --quiet 2>"$w/err" ||
  fail_with "$w/err" "apreport"
m=$w/f/r_megatron.args
grep -q '^--recompute-method block$' "$m" && grep -q '^--recompute-num-layers 1$' "$m" ||
  fail_with "$m" "Megatron's block recomputation"
grep -q 'torchtitan cannot express recomputing only the first 1' "$w/f/r_torchtitan.toml" &&
  grep -q '^mode = "full"$' "$w/f/r_torchtitan.toml" ||
  fail_with "$w/f/r_torchtitan.toml" "torchtitan's note"
grep -q 'DeepSpeed cannot express recomputing only the first 1' "$w/f/r_deepspeed.json" ||
  fail_with "$w/f/r_deepspeed.json" "DeepSpeed's note"
echo "ok"
