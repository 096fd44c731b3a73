#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# An ep stage transformed from a stored level that splits the experts on E
# over its whole tp axis (docs/expert-parallel.md, "Transformed from an E
# split"): the small Mixtral of ep_costs.sh (2 blocks of 8 experts, top 2,
# hidden 256, sequence 128, dropless, micro-batch 4) swept on 1x4 H100 with
# two memory levels, whose level 1 on logical (2, 2) splits E 2 ways over
# axis 1 and keeps the in/out dimensions whole. dp=2,tp=2,ep=4,etp=1 had no
# level to price it (ep 4 is neither the stored split nor a multiple of a
# whole-E level's); it is now that level with
# - the expert weights 8 x 3 x 256 x 14336 x 2 layers / 4 a GPU (was / 2),
# - Megatron's all-to-alls over 4 GPUs, a GPU's 1 sample of 8 x 32 slots,
# - the level's own dispatch collectives taken out: the combine's all-reduce
#   of its dp replica's 2 samples x 128 x 256 x 2 bytes in the forward, the
#   dispatch's of the same bytes in the backward (rerun there under full
#   recomputation) and the routing weights' gradient all-gather of
#   2 x 128 x 8 x 2 bytes (the stage program of profiler/sharding, as the
#   sharding ILP's all-gather dispatcher runs it).
# Stored, the plan's stage memory in apreport is apsolve's (the initial
# state through the same transformation).
# Usage: ep_from_split.sh APPROF APSOLVE PYTHON APREPORT
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3 apreport=$4
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
db=$w/m.db
"$approf" sweep --db "$db" --model mixtral --num-layers 2 --hidden 256 --heads 4 --seq-len 128 \
  --vocab 1000 --cluster 1x4 --hardware h100-sxm --batch 16 --micro-batches 4 --layers 2 \
  --recompute none,full --memory-levels 2 >"$w/out" 2>&1 || fail_with "$w/out" "mixtral sweep"
run() { # NAME KNOBS
  "$apsolve" --db "$db" --no-store --format json --parallel "$2" >"$w/$1.json" 2>"$w/$1.err" ||
    fail_with "$w/$1.err" "--parallel $2"
}
run tp dp=2,tp=2,pp=1
run ep4 dp=2,tp=2,pp=1,ep=4,etp=1
run tpfull dp=2,tp=2,pp=1,recompute=full
run ep4full dp=2,tp=2,pp=1,ep=4,etp=1,recompute=full
# the stored split itself is still priced as profiled
run ep2 dp=2,tp=2,pp=1,ep=2,etp=1
grep -qF "the level priced splits them so, its collectives as profiled" "$w/ep2.err" ||
  fail_with "$w/ep2.err" "ep=2 as profiled"
grep -qF "44040192 of their 176160768 weight elements per GPU (the level priced splits them 2 ways on E over its tp axis: transformed)" "$w/ep4.err" ||
  fail_with "$w/ep4.err" "the transformed stage's line"
# 176160768 / 2 - 176160768 / 4 = 44040192 elements leave a GPU: x (2 + 2)
# bytes of weight and gradient on the peak, x 12 (f32 master, two moments)
# in the initial state; the expert-data-parallel group is 4 / 4 = 1 GPU
grep -q "once per iteration -[0-9.e-]* s (the expert gradients reduced over 1 GPUs, Adam over their shard); memory -176160768 bytes on the peak, -528482304 in the initial state" "$w/ep4.err" ||
  fail_with "$w/ep4.err" "the memory figures"
cp "$db" "$w/st.db" || fail "copying the database"
"$apsolve" --db "$w/st.db" --quiet --parallel dp=2,tp=2,pp=1,ep=4,etp=1 >"$w/st.out" 2>&1 ||
  fail_with "$w/st.out" "storing the ep=4 plan"
"$apreport" --db "$w/st.db" --out "$w/rep" --no-store --quiet >"$w/rep.out" 2>&1 ||
  fail_with "$w/rep.out" "apreport of the ep=4 plan"
for l in "token all-to-all of 131072 bytes per GPU, 4 forward and 4 backward per micro-batch over 4 GPUs" \
  "probabilities all-to-all of 512 bytes per GPU, 2 forward and 2 backward per micro-batch over 4 GPUs" \
  "the level's own all-reduce of the tokens around its experts (taken out) of 131072 bytes per GPU, 2 forward and 2 backward per micro-batch over 2 GPUs" \
  "the level's own all-gather of the routing weights' gradient (taken out) of 4096 bytes per GPU, 0 forward and 2 backward per micro-batch over 2 GPUs" \
  "sorts by local expert of 525312 bytes per GPU (memory copies), 2 forward and 2 backward per micro-batch"; do
  grep -qF "expert parallelism, stage 0: $l" "$w/ep4.err" || fail_with "$w/ep4.err" "line: $l"
done
for l in "the level's own all-reduce of the tokens around its experts (taken out) of 131072 bytes per GPU, 2 forward and 4 backward (2 of them full recomputation's rerun)" \
  "the level's own all-gather of the routing weights' gradient (taken out) of 4096 bytes per GPU, 0 forward and 2 backward per micro-batch"; do
  grep -qF "expert parallelism, stage 0: $l" "$w/ep4full.err" || fail_with "$w/ep4full.err" "line: $l"
done

"$py" - "$w" <<'EOF' || fail "ep from an E split"
import json, re, sys
w = sys.argv[1]
st = {k: json.load(open("%s/%s.json" % (w, k)))["plans"][0]["stages"][0]
      for k in ("tp", "ep4", "tpfull", "ep4full")}
def costs(k):
    out = {}
    for line in open("%s/%s.err" % (w, k)):
        m = re.search(r"stage 0: (.*?) of [0-9]+ bytes per GPU.*\(([-+][^ ]+) s forward, "
                      r"([-+][^ ]+) s backward\)", line)
        if m:
            out[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    return out
def near(a, b, scale=0.0):
    return abs(a - b) <= 1e-5 * max(abs(a), abs(b), scale) + 1e-15
AR = "the level's own all-reduce of the tokens around its experts (taken out)"
AG = "the level's own all-gather of the routing weights' gradient (taken out)"
for a, b, n in (("tp", "ep4", 1), ("tpfull", "ep4full", 2)):
    assert st[a]["config_index"] == st[b]["config_index"], (st[a], st[b])  # the same stored level
    c = costs(b)
    for i, ph in enumerate(("fwd_cost", "bwd_cost")):
        d = st[b][ph] - st[a][ph]
        assert near(d, sum(v[i] for v in c.values()), sum(abs(v[i]) for v in c.values())), \
            (b, ph, d, c)
    # the forward's all-reduce leaves the backward too (the dispatch's), and
    # once more under full recomputation (the rerun forward's)
    assert c[AR][0] < 0 and near(c[AR][1], (1 + (n - 1)) * c[AR][0]), c
    assert c[AG][0] == 0 and c[AG][1] < 0, c
rep = json.load(open("%s/rep/report.json" % w))["stages"][0]
assert rep["memory_needed"] == st["ep4"]["memory_needed"], (rep["memory_needed"], st["ep4"])
print("ep=4 from the E split: all-reduce taken out %.6g s a layer, the routing weights' "
      "gather %.6g s" % (costs("ep4")[AR][0] / 2, costs("ep4")[AG][1] / 2))
EOF
