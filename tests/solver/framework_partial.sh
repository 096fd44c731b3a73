#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# apsolve --framework megatron tries the knobs Megatron-LM runs beside the
# sweep's variants (solver/session_fw_partial.c, docs/solver.md "The best
# plan a framework runs"):
# - recompute_layers=K: a small GPT (8 blocks) swept on 1x2 H100 with
#   recompute none and full; under a budget one byte below the least
#   that any recompute=none plan of its pp=2 layouts needs, no none plan
#   fits, every full plan is slower than the search's winner, and the
#   winner recomputes the first K layers of each chunk, 0 < K < the
#   chunk's layers, at the price --parallel gives its layout;
#   stored, Megatron's launch file says --recompute-method block
#   --recompute-num-layers K; torchtitan's search, which cannot run it,
#   picks none.
# - offload=N: a small GPT (4 blocks) swept on 1x1 under a spec with a
#   host link (2 GB/s) and recompute none only: one byte below the plain
#   plan's need only offload fits, and the search picks it at the price
#   --parallel gives it; under the same spec without a host link nothing
#   fits (exit 3).
# Usage: framework_partial.sh APPROF APSOLVE PYTHON APREPORT
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3 apreport=$4
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
# JSON FILE: one plan's dict (--format json gives a plan, or "plans")
plan_py='import json, sys
def plan(f):
    d = json.load(open(f))
    return d["plans"][0] if "plans" in d else d'

db=$w/g.db
"$approf" sweep --db "$db" --model gpt --num-layers 8 --hidden 256 --heads 4 --seq-len 512 \
  --vocab 1000 --cluster 1x2 --hardware h100-sxm --batch 16 --micro-batches 4 --layers 8 \
  --memory-levels 1 --recompute none,full --zero 0 --quiet >"$w/out" 2>&1 ||
  fail_with "$w/out" "gpt sweep"
price() { # DB NAME PARALLEL [OPTIONS]: the plan as JSON into $w/NAME.json (exit 3: infeasible)
  d=$1 n=$2 k=$3
  shift 3
  "$apsolve" --db "$d" --no-store --format json --parallel "$k" "$@" \
    >"$w/$n.json" 2>"$w/$n.err"
  rc=$?
  [ $rc = 0 ] || [ $rc = 3 ] || fail_with "$w/$n.err" "--parallel $k: exit $rc"
}
for v in 1 2 4; do
  price "$db" none$v "dp=1,tp=1,pp=2,recompute=none,vpp=$v"
done
budget=$("$py" -c "$plan_py
print(min(max(s['memory_needed'] for s in plan(f)['stages']) for f in sys.argv[1:]) - 1)" \
  "$w/none1.json" "$w/none2.json" "$w/none4.json") || fail "the none plans' needs"
for v in 1 2 4; do
  price "$db" nb$v "dp=1,tp=1,pp=2,recompute=none,vpp=$v" --memory-budget "$budget"
  price "$db" fb$v "dp=1,tp=1,pp=2,recompute=full,vpp=$v" --memory-budget "$budget"
done
"$apsolve" --db "$db" --no-store --format json --framework megatron --memory-budget "$budget" \
  >"$w/mk.json" 2>"$w/mk.err" || fail_with "$w/mk.err" "--framework megatron, $budget bytes"
"$py" -c "$plan_py
fs = plan(sys.argv[1])['framework_search']
print(fs['parallel'])" "$w/mk.json" >"$w/mk.par" || fail "the search's layout"
price "$db" again "$(cat "$w/mk.par")" --memory-budget "$budget"
"$py" - "$w" <<PY || fail_with "$w/mk.err" "--framework megatron's recompute_layers"
$plan_py
w = sys.argv[1]
best = plan(w + "/mk.json")
fs, again = best["framework_search"], plan(w + "/again.json")
k, vpp = best.get("recompute_layers", 0), best.get("virtual_stages", 1) or 1
assert "recompute_layers=%d" % k in fs["parallel"] and best["feasible"], fs
assert 0 < k < 4 // vpp, (k, vpp, fs)       # 4 layers a stage, vpp chunks of it
assert all(s["recompute"] == "full" for s in best["stages"]), best["stages"]
# the price --parallel gives the winner's layout
assert again["feasible"] and again["full_cost"] == best["full_cost"] == fs["price"], \
    (again["full_cost"], best["full_cost"], fs["price"])
for v in (1, 2, 4):
    assert not plan("%s/nb%d.json" % (w, v))["feasible"], v   # none does not fit
    f = plan("%s/fb%d.json" % (w, v))
    assert f["feasible"] and f["full_cost"] > best["full_cost"], (v, f["full_cost"])
PY
# stored as that --parallel plan: Megatron's launch file recomputes K layers
"$apsolve" --db "$db" --framework megatron --memory-budget "$budget" >"$w/st" 2>&1 ||
  fail_with "$w/st" "store"
id=$(sed -n 's/^Stored as plan \([0-9]*\).*/\1/p' "$w/st")
mkdir -p "$w/f"
"$apreport" --db "$db" --plan "$id" --name r --out "$w/f" --quiet 2>"$w/err" ||
  fail_with "$w/err" "apreport --plan $id"
k=$(sed -n 's/.*recompute_layers=\([0-9]*\).*/\1/p' "$w/mk.par")
grep -q '^--recompute-method block$' "$w/f/r_megatron.args" &&
  grep -q "^--recompute-num-layers $k\$" "$w/f/r_megatron.args" ||
  fail_with "$w/f/r_megatron.args" "Megatron's block recomputation of $k layers"
"$apsolve" --db "$db" --no-store --format json --framework torchtitan --memory-budget "$budget" \
  >"$w/tt.json" 2>"$w/tt.err" || fail_with "$w/tt.err" "--framework torchtitan"
"$py" -c "$plan_py
p = plan(sys.argv[1])
assert 'recompute_layers' not in p['framework_search']['parallel'], p['framework_search']
assert not p.get('recompute_layers'), p.get('recompute_layers')" "$w/tt.json" ||
  fail "torchtitan's plan recomputes only some layers"

# offload: a spec with a host link, and the same without
"$approf" hardware show h100-sxm >"$w/h100.spec" || fail "hardware show"
sed -e 's/^name *=.*/name = h100-slow-host/' \
    -e 's/^host_link_bandwidth_gbs *=.*/host_link_bandwidth_gbs = 2/' "$w/h100.spec" >"$w/slow.spec"
sed -e 's/^name *=.*/name = h100-no-host/' \
    -e 's/^host_link_bandwidth_gbs *=.*/host_link_bandwidth_gbs = 0/' "$w/h100.spec" >"$w/none.spec"
grep -q '^host_link_bandwidth_gbs = 2$' "$w/slow.spec" || fail "the spec has no host link field"
for s in slow none; do
  "$approf" sweep --db "$w/$s.db" --model gpt --num-layers 4 --hidden 256 --heads 4 \
    --seq-len 128 --vocab 1000 --cluster 1x1 --hardware "$w/$s.spec" --batch 8 \
    --micro-batches 2 --layers 4 --memory-levels 1 --recompute none --quiet >"$w/out" 2>&1 ||
    fail_with "$w/out" "sweep $s"
done
price "$w/slow.db" base "dp=1,tp=1,pp=1"
budget=$("$py" -c "$plan_py
print(max(s['memory_needed'] for s in plan(sys.argv[1])['stages']) - 1)" "$w/base.json") ||
  fail "the plain plan's need"
price "$w/slow.db" baseb "dp=1,tp=1,pp=1" --memory-budget "$budget"
"$apsolve" --db "$w/slow.db" --no-store --format json --framework megatron \
  --memory-budget "$budget" >"$w/mo.json" 2>"$w/mo.err" ||
  fail_with "$w/mo.err" "--framework megatron with a host link, $budget bytes"
"$py" -c "$plan_py
print(plan(sys.argv[1])['framework_search']['parallel'])" "$w/mo.json" >"$w/mo.par" ||
  fail "the search's layout"
price "$w/slow.db" oagain "$(cat "$w/mo.par")" --memory-budget "$budget"
"$py" - "$w" <<PY || fail_with "$w/mo.err" "--framework megatron's offload"
$plan_py
w = sys.argv[1]
best, again = plan(w + "/mo.json"), plan(w + "/oagain.json")
fs = best["framework_search"]
n = best["offload"]["layers"]
assert 0 < n < 4 and "offload=%d" % n in fs["parallel"] and best["feasible"], fs
assert not plan(w + "/baseb.json")["feasible"]                 # only offload fits
assert again["feasible"] and again["full_cost"] == best["full_cost"] == fs["price"], \
    (again["full_cost"], best["full_cost"], fs["price"])
PY
grep -q "activation offload, stage 0 (layers 0-3): the first" "$w/mo.err" ||
  fail_with "$w/mo.err" "the offload message"
# no host link: no offload plan, nothing fits
"$apsolve" --db "$w/none.db" --no-store --framework megatron --memory-budget "$budget" \
  >"$w/out" 2>"$w/err"
expect_rc 3 $? "$w/err" "--framework megatron without a host link"
echo "ok"
