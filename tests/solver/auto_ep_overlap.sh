#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The MoE all-to-all overlap in the auto search's ep step
# (solver/session_autoep.c; docs/solver.md "Expert parallelism in the auto
# search", docs/expert-parallel.md "The MoE all-to-all overlap"):
# Mixtral-8x7B's blocks (2 of them, sequence 512) swept data-parallel only
# on 1x4 H100, global batch 16 in 4 micro-batches, one stage
# (--max-stages 1: Megatron-Core runs the overlap under 1F1B only without
# pipelining). By hand:
# - ep=4 etp=1 moves 4 token all-to-alls and 2 probabilities all-to-alls
#   each way per micro-batch, all shorter than the other micro-batch's
#   compute; with the overlap each is hidden whole under it, so the stage
#   costs the same less those all-to-alls' seconds (as --parallel lists
#   them), and the 1F1B time of 4 micro-batches 4 x that less; the
#   overlap holds one more micro-batch in flight (min(B, 2) = 2 instead of
#   1), one more intermediate_size of the entry (the sweep's) in the
#   stage's need, which fits: the auto plan is ep=4 etp=1 with the
#   overlap, the --parallel dp=4,tp=1,pp=1,ep=4,etp=1,moe_a2a_overlap=1
#   plan priced alike; it says so, stores the knob, apsolve --plan
#   re-prices it alike, and apreport's Megatron file writes
#   --overlap-moe-expert-parallel-comm (passing check_launch.py).
#   (Without the ep step's overlap the auto plan is ep=4 without it.)
# - with --memory-budget exactly the need of ep=4 without the overlap (no
#   headroom), the overlap's one more micro-batch does not fit on cp=1:
#   the auto plan is not ep=4 with the overlap (its need is over the
#   budget by the entry's intermediate_size). It is cp=2 ep=4 with the
#   overlap, 17.89 of the 17.92 GB: a cp=2 stage holds half of each
#   micro-batch's saved activations and of its transient's
#   activation-sized part (docs/context-parallel.md, "The transient's
#   activation-sized part"), which makes room for the second micro-batch
#   in flight; --parallel dp=2,tp=1,pp=1,cp=2,ep=4,etp=1,moe_a2a_overlap=1
#   prices it alike (time and memory), within the budget, and it beats
#   ep=4 without the overlap, which also fits.
# - --parallel dp=2,tp=1,pp=2,vpp=2,ep=2,etp=1,moe_a2a_overlap=1 runs the
#   interleaved schedule (vpp=), where Megatron-Core runs the overlap with
#   pipelining: priced, not refused as 1F1B.
# Usage: auto_ep_overlap.sh APPROF APSOLVE PYTHON APREPORT MANIFESTS CHECK_LAUNCH
# The sweeps of models whose training state fits one device profile Alpa's
# plain space (--variants alpa), the space these scenarios were built on;
# the default's ZeRO variants (docs/variants.md, "The default space") would
# win some of them without cp or ep.
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3 apreport=$4 man=$5 check=$6
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT

"$approf" sweep --db "$w/dp.db" --quiet --variants alpa --model mixtral --preset mixtral-8x7b --num-layers 2 \
  --layers 2 --seq-len 512 --cluster 1x4 --hardware h100-sxm --batch 16 --micro-batches 4 \
  --logical-space data_parallel_only >"$w/out" 2>&1 || fail_with "$w/out" "data-parallel sweep"
"$apsolve" --db "$w/dp.db" --max-stages 1 >"$w/out" 2>"$w/err" || fail_with "$w/err" "apsolve"
grep -q "^apsolve: expert parallelism ep=4 etp=1 moe_a2a_overlap=1 on micro-batch size 4 (sweep 1, 4 micro-batches of 4): objective" "$w/err" ||
  fail_with "$w/err" "the ep=4 overlap candidate line"
grep -q "^apsolve: expert parallelism ep=4 etp=1 moe_a2a_overlap=1 wins: " "$w/err" ||
  fail_with "$w/err" "why the overlap won"
grep -q "^MoE all-to-all overlap (moe_a2a_overlap=1" "$w/out" ||
  fail_with "$w/out" "apsolve's plan text does not say the overlap"
id=$(sed -n 's/^Stored as plan \([0-9]*\)$/\1/p' "$w/out")
[ -n "$id" ] || fail_with "$w/out" "no plan stored"
"$apsolve" --db "$w/dp.db" --no-store --format json --max-stages 1 >"$w/auto.json" 2>/dev/null ||
  fail "auto json"
"$apsolve" --db "$w/dp.db" --no-store --format json --parallel dp=4,tp=1,pp=1,ep=4,etp=1 \
  >"$w/no.json" 2>"$w/no.err" || fail_with "$w/no.err" "ep=4 without the overlap"
"$apsolve" --db "$w/dp.db" --no-store --format json \
  --parallel dp=4,tp=1,pp=1,ep=4,etp=1,moe_a2a_overlap=1 >"$w/ov.json" 2>/dev/null ||
  fail "ep=4 with the overlap"
"$apsolve" --db "$w/dp.db" --no-store --format json --plan "$id" >"$w/again.json" 2>"$w/err" ||
  fail_with "$w/err" "apsolve --plan of the overlap plan"
"$py" - "$w/dp.db" "$id" "$w/auto.json" "$w/no.json" "$w/ov.json" "$w/again.json" "$w/no.err" \
  >"$w/budget" <<'PY' || fail "the overlap plan"
import json, re, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
o = json.loads(db.execute("SELECT options FROM plan WHERE id = ?",
                          (int(sys.argv[2]),)).fetchone()[0])
p = o["parallel"]
assert (p["dp"], p["tp"], p["pp"], p["ep"], p["etp"], p["moe_a2a_overlap"]) == (4, 1, 1, 4, 1, 1), o
auto, again = json.load(open(sys.argv[3])), json.load(open(sys.argv[6]))
no, ov = (json.load(open(f))["plans"][0] for f in sys.argv[4:6])
assert auto["ep"] == 4 and auto["etp"] == 1 and auto["moe_a2a_overlap"] == 1, auto
# the auto plan is the --parallel overlap plan, priced alike (and so re-priced)
for x in (ov, again):
    assert [s["memory_needed"] for s in x["stages"]] == [s["memory_needed"] for s in auto["stages"]]
    assert abs(x["total_cost"] - auto["total_cost"]) <= 1e-12 * auto["total_cost"], (x, auto)
# time: the all-to-alls apsolve lists for ep=4 (seconds added per micro-batch
# each way), hidden whole: the stage that much cheaper, T four times
a2a = 0.0
for line in open(sys.argv[7]):
    m = re.search(r"stage 0: (token|probabilities) all-to-all .*\(\+([0-9.e-]+) s forward, "
                  r"\+([0-9.e-]+) s backward\)", line)
    if m:
        a2a += float(m.group(2)) + float(m.group(3))
assert a2a > 0, "no all-to-all listed"
(sn,), (so,) = no["stages"], ov["stages"]
# (the listed seconds have 6 significant digits)
assert abs((sn["cost"] - so["cost"]) - a2a) <= 1e-5 * a2a, (sn["cost"], so["cost"], a2a)
assert abs((no["cost"] - ov["cost"]) - 4 * a2a) <= 4e-5 * a2a, (no["cost"], ov["cost"], a2a)
# memory: one more micro-batch in flight, the entry's intermediate_size
assert (sn["in_flight"], so["in_flight"]) == (1, 2), (sn["in_flight"], so["in_flight"])
(inter,) = db.execute(
    "SELECT c.intermediate_size FROM stage_entry e JOIN stage_cost c USING (sweep_id, cost_id) "
    "WHERE e.start_layer = 0 AND e.end_layer = 1 AND e.submesh_index = ? AND e.config_index = ? "
    "AND e.phase = 0", (so["submesh_index"], so["config_index"])).fetchone()
assert inter > 0 and so["memory_needed"] - sn["memory_needed"] == inter, (
    so["memory_needed"], sn["memory_needed"], inter)
assert so["memory_ok"] and ov["total_cost"] < no["total_cost"]
print(sn["memory_needed"])
PY
mkdir -p "$w/f"
"$apreport" --db "$w/dp.db" --plan "$id" --name a --out "$w/f" --quiet 2>"$w/err" ||
  fail_with "$w/err" "apreport"
grep -q '^--overlap-moe-expert-parallel-comm$' "$w/f/a_megatron.args" ||
  fail_with "$w/f/a_megatron.args" "the overlap flag"
grep -q '^--expert-model-parallel-size 4$' "$w/f/a_megatron.args" || fail_with "$w/f/a_megatron.args" "ep size"
"$py" "$check" "$man/megatron-lm-core_v0.19.0.json" "$w/f/a_megatron.args" >"$w/chk" 2>&1 ||
  fail_with "$w/chk" "the Megatron file of the overlap plan"

# where memory forbids it: the budget of ep=4 without the overlap
budget=$(cat "$w/budget")
"$apsolve" --db "$w/dp.db" --no-store --format json --max-stages 1 --memory-budget "$budget" \
  --memory-headroom 0 >"$w/tight.json" 2>"$w/err" || fail_with "$w/err" "apsolve, tight budget"
"$apsolve" --db "$w/dp.db" --no-store --format json \
  --parallel dp=2,tp=1,pp=1,cp=2,ep=4,etp=1,moe_a2a_overlap=1 >"$w/cpov.json" 2>"$w/err" ||
  fail_with "$w/err" "cp=2 ep=4 with the overlap"
"$py" - "$w/tight.json" "$w/no.json" "$w/ov.json" "$w/cpov.json" "$budget" <<'PY' ||
import json, sys
t = json.load(open(sys.argv[1]))
no, ov, cpov = (json.load(open(f))["plans"][0] for f in sys.argv[2:5])
budget = int(sys.argv[5])
need = lambda p: [s["memory_needed"] for s in p["stages"]]
# the cp=1 overlap plan does not fit, and is not chosen
assert max(need(ov)) > budget, (need(ov), budget)
assert not (t.get("cp", 1) == 1 and t.get("moe_a2a_overlap")), t
# the plan chosen: cp=2 ep=4 with the overlap, as --parallel prices it, within
# the budget, better than ep=4 without the overlap (which fits too)
assert (t.get("cp"), t["ep"], t["etp"], t.get("moe_a2a_overlap")) == (2, 4, 1, 1), t
assert need(t) == need(cpov) and max(need(t)) <= budget, (need(t), need(cpov), budget)
assert abs(t["total_cost"] - cpov["total_cost"]) <= 1e-12 * cpov["total_cost"], (t, cpov)
assert max(need(no)) <= budget and t["total_cost"] < no["total_cost"], (t, no)
PY
  fail "the plan under the tight budget"

# --parallel's vpp= makes the schedule interleaved, where the overlap runs
# with pp > 1: accepted without --schedule (it was refused as 1F1B)
"$apsolve" --db "$w/dp.db" --no-store --format json \
  --parallel dp=2,tp=1,pp=2,vpp=2,ep=2,etp=1,moe_a2a_overlap=1 >"$w/vpp.json" 2>"$w/err" ||
  fail_with "$w/err" "pp=2 vpp=2 with the overlap"
"$py" - "$w/vpp.json" <<'PY' || fail "the pp=2 vpp=2 overlap plan"
import json, sys
p = json.load(open(sys.argv[1]))["plans"][0]
assert p["schedule"] == "interleaved" and p["virtual_stages"] == 2, p
assert p["moe_a2a_overlap"] == 1 and p["ep"] == 2, p
PY
echo "ok"
