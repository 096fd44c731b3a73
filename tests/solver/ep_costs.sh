#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The ep costs of docs/expert-parallel.md beyond the plain dispatcher's
# (tests/solver/expert_parallel.sh has those), on the same small Mixtral
# (2 blocks of 8 experts, top 2, hidden 256, sequence 128, dropless) swept
# on 1x4 H100 with recompute none and full:
# - under full recomputation Megatron-Core reruns the MoE layer's forward,
#   the dispatcher's all-to-alls, token counts' all-gather and sorts
#   included, in the backward (megatron/core/recompute.py,
#   checkpointed_forward, core_v0.19.0): the backward adds the forward's
#   costs on top of its own;
# - with etp 2 the dispatcher all-gathers the received tokens and their
#   routing probabilities over the etp group after the all-to-all and
#   reduce-scatters the experts' output before the combine's (the backward
#   runs each the other way: token_dispatcher.py dispatch_postprocess,
#   combine_preprocess, core_v0.19.0), priced on the etp group's own
#   placement, and takes out the stored level's own all-reduces around its
#   experts; it sorts etp x the slots;
# - the etp group within a host (1x4) and across hosts: the sharding ILP
#   splits the experts' in/out dimensions only where the tp axis lies in a
#   host (on 4x1 and 8x1 it splits E), so the spanning case is the 1x4
#   sweep's stored stages relabelled as 4 hosts of 1 GPU: the etp pair then
#   spans 2 hosts and its all-gather and reduce-scatter are priced on the
#   network;
# - apsolve lists every cost it added, one line each.
# Usage: ep_costs.sh APPROF APSOLVE PYTHON SQLITE3
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3 sq=$4 apreport=$5
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
db=$w/m.db
"$approf" sweep --db "$db" --model mixtral --num-layers 2 --hidden 256 --heads 4 --seq-len 128 \
  --vocab 1000 --cluster 1x4 --hardware h100-sxm --batch 16 --micro-batches 4 --layers 2 \
  --recompute none,full >"$w/out" 2>&1 || fail_with "$w/out" "mixtral sweep"
bw=$("$sq" "$db" "select intra_host_bandwidth from hardware")
lat=$("$sq" "$db" "select intra_host_latency from hardware")
mem=$("$sq" "$db" "select memory_bandwidth from hardware")
meff=$("$sq" "$db" "select capabilities from hardware" |
  "$py" -c 'import json, sys; print(json.load(sys.stdin)["memory_efficiency"])')

run() { # NAME KNOBS
  "$apsolve" --db "$db" --no-store --format json --parallel "$2" >"$w/$1.json" 2>"$w/$1.err" ||
    fail_with "$w/$1.err" "--parallel $2"
}
run plain dp=4,tp=1,pp=1,recompute=full
run full dp=4,tp=1,pp=1,ep=2,recompute=full
run tp dp=2,tp=2,pp=1
run etp dp=2,tp=2,pp=1,ep=2
run tpfull dp=2,tp=2,pp=1,recompute=full
run etpfull dp=2,tp=2,pp=1,ep=2,recompute=full
# Megatron-Core's MoE all-to-all overlap (moe_a2a_overlap=1)
run ov dp=2,tp=2,pp=1,ep=2,moe_a2a_overlap=1
# stored, the knob goes with the plan: apreport's stage need is apsolve's,
# and the Megatron-LM launch file turns the overlap on
cp "$db" "$w/ov.db" || fail "copying the database"
"$apsolve" --db "$w/ov.db" --quiet --parallel dp=2,tp=2,pp=1,ep=2,moe_a2a_overlap=1 \
  >"$w/ovs.out" 2>&1 || fail_with "$w/ovs.out" "storing the moe_a2a_overlap plan"
"$sq" "$w/ov.db" "select options from plan" | grep -qF '"moe_a2a_overlap": 1' ||
  fail "the stored plan's options lack moe_a2a_overlap"
"$apreport" --db "$w/ov.db" --out "$w/ovrep" --export megatron --no-store --quiet \
  >"$w/ovrep.out" 2>&1 || fail_with "$w/ovrep.out" "apreport of the moe_a2a_overlap plan"
grep -q -- "--overlap-moe-expert-parallel-comm" "$w/ovrep/plan1_megatron.args" ||
  fail_with "$w/ovrep/plan1_megatron.args" "the launch file's overlap flag"
grep -qF "stage 0: moe_a2a_overlap: the all-to-alls above" "$w/ov.err" ||
  fail_with "$w/ov.err" "the overlap's line"
# where Megatron-Core does not run it: refused, naming why
for k in "--schedule gpipe --parallel dp=2,tp=2,pp=1,ep=2,moe_a2a_overlap=1:not on --schedule gpipe" \
  "--parallel dp=2,tp=2,pp=2,ep=2,moe_a2a_overlap=1:needs vpp >= 2" \
  "--parallel dp=4,tp=1,pp=1,moe_a2a_overlap=1:needs expert parallelism"; do
  # shellcheck disable=SC2086
  "$apsolve" --db "$db" --no-store ${k%%:*} >"$w/ref.out" 2>&1 && fail "accepted: ${k%%:*}"
  grep -qF "${k#*:}" "$w/ref.out" || fail_with "$w/ref.out" "refusal: ${k#*:}"
done
# the same stored stages on 4 hosts of 1 GPU: logical (2, 2) on submesh 4x1
cp "$db" "$w/hosts.db" || fail "copying the database"
"$sq" "$w/hosts.db" "update sweep set cluster_hosts = 4, cluster_gpus = 1;
  update sweep_submesh set hosts = hosts * gpus_per_host, gpus_per_host = 1" ||
  fail "relabelling the hosts"
db=$w/hosts.db
run spantp dp=2,tp=2,pp=1
run spanetp dp=2,tp=2,pp=1,ep=2
db=$w/m.db
inter_bw=$("$sq" "$db" "select inter_host_bandwidth from hardware")
inter_lat=$("$sq" "$db" "select inter_host_latency from hardware")

# every cost the full recomputation's stage added, listed with its rerun
for l in "token all-to-all of 131072 bytes per GPU, 4 forward and 8 backward (4 of them full recomputation's rerun) per micro-batch over 2 GPUs" \
  "probabilities all-to-all of 512 bytes per GPU, 2 forward and 4 backward (2 of them full recomputation's rerun) per micro-batch over 2 GPUs" \
  "token counts all-gather of 64 bytes per GPU, 2 forward and 2 backward (2 of them full recomputation's rerun) per micro-batch over 2 GPUs" \
  "sorts by local expert of 525312 bytes per GPU (memory copies), 2 forward and 4 backward (2 of them full recomputation's rerun) per micro-batch" \
  "per-expert GEMMs and FP8 casts (TE GroupedLinear) of 0 bytes per GPU (kernels), 10 forward and 30 backward (10 of them full recomputation's rerun) per micro-batch"; do
  grep -qF "expert parallelism, stage 0: $l" "$w/full.err" || fail_with "$w/full.err" "line: $l"
done
grep -q "in 5 costs (below)" "$w/full.err" || fail_with "$w/full.err" "the count of costs"
# and what it changed once per iteration and in memory: half of the
# 2 x 3 x 8 x 256 x 14336 expert weight elements leave a GPU, 88080384 x
# (2 + 2) bytes of weight and gradient buffer on the peak, x 12 (f32 master
# and two moments) in the initial state
grep -q "once per iteration -[0-9.e-]* s (the expert gradients reduced over 2 GPUs, Adam over their shard); memory -352321536 bytes on the peak, -1056964608 in the initial state" "$w/full.err" ||
  fail_with "$w/full.err" "the once-per-iteration and memory figures"
for f in etp spanetp; do
  for l in "token all-gather over etp of 131072 bytes per GPU, 2 forward and 2 backward per micro-batch over 2 GPUs" \
    "output reduce-scatter over etp of 131072 bytes per GPU, 2 forward and 2 backward per micro-batch over 2 GPUs" \
    "probabilities all-gather over etp of 512 bytes per GPU, 2 forward and 2 backward per micro-batch over 2 GPUs" \
    "the level's own all-reduce of the experts' slots (taken out) of 262144 bytes per GPU, 2 forward and 2 backward per micro-batch over 2 GPUs"; do
    grep -qF "expert parallelism, stage 0: $l" "$w/$f.err" || fail_with "$w/$f.err" "line: $l"
  done
  grep -q "in 9 costs (below)" "$w/$f.err" || fail_with "$w/$f.err" "the count of etp costs"
done
grep -qF "token all-gather over etp of 131072 bytes per GPU, 2 forward and 4 backward (2 of them full recomputation's rerun)" "$w/etpfull.err" ||
  fail_with "$w/etpfull.err" "the etp all-gather's rerun"

launch=$("$sq" "$db" "select capabilities from hardware" |
  "$py" -c 'import json, sys; print(json.load(sys.stdin)["kernel_launch_overhead"])')
"$py" - "$w" "$bw" "$lat" "$mem" "$meff" "$inter_bw" "$inter_lat" "$launch" <<'EOF' || fail "ep costs"
import json, re, sys
w = sys.argv[1]
bw, lat = float(sys.argv[2]) * 0.8, float(sys.argv[3])  # h100-sxm bus efficiency 0.8
rate = float(sys.argv[4]) * float(sys.argv[5])
net_bw, net_lat = float(sys.argv[6]) * 0.8, float(sys.argv[7])
launch = float(sys.argv[8])
names = ("plain", "full", "tp", "etp", "tpfull", "etpfull", "spantp", "spanetp", "ov")
st = {k: json.load(open("%s/%s.json" % (w, k)))["plans"][0]["stages"][0] for k in names}
assert st["plain"]["recompute"] == st["full"]["recompute"] == "full", st["full"]["recompute"]
assert st["etpfull"]["recompute"] == "full", st["etpfull"]["recompute"]
def a2a(b, n=2):  # Alpa's all-to-all: (n-1)/n^2 of the group's n x b bytes + (n-1) lat
    return (n - 1) / n**2 * (n * b) / bw + (n - 1) * lat
def sorts(rows):  # read + write the slots with their probabilities, then the output
    return (2 * rows * 257 * 2 + 2 * rows * 256 * 2) / rate
def delta(a, b):
    return {ph: st[b][ph] - st[a][ph] for ph in ("fwd_cost", "bwd_cost")}
def costs(k):  # apsolve's per-cost lines: name -> (forward, backward) seconds
    out = {}
    for line in open("%s/%s.err" % (w, k)):
        m = re.search(r"stage 0: (.*?) of [0-9]+ bytes per GPU.*\(([-+][^ ]+) s forward, "
                      r"([-+][^ ]+) s backward\)", line)
        if m:
            out[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    return out
def near(a, b, scale=0.0):  # the lines print 6 significant digits
    return abs(a - b) <= 1e-5 * max(abs(a), abs(b), scale) + 1e-15
# dp=4, micro-batch 4: 1 sample of 8 x 32 slots a GPU, 131072 bytes of tokens,
# 512 of probabilities; 2 MoE layers; tokens dispatched and combined, their
# gradients both ways in the backward
# and TE GroupedLinear's per-expert GEMMs, 4 local experts: 2 x 4 forward,
# 4 x 4 backward a layer against the level's 3 and 6 batched kernels
per = 2 * (2 * a2a(131072) + a2a(512) + sorts(256))
d = delta("plain", "full")
gather = (d["fwd_cost"] - per - 2 * 5 * launch) / 2  # dropless: the token counts' all-gather
assert 0 < gather < 1e-4, gather
# full recomputation: the backward's own, and the rerun forward's
own = per + 2 * 10 * launch
assert abs(d["bwd_cost"] - (own + d["fwd_cost"])) <= 1e-12, (d["bwd_cost"], own + d["fwd_cost"])
# etp 2 on dp=2,tp=2: a GPU's tokens are micro-batch 4 / 4 = 1 sample again,
# the sorts handle 2 x 256 rows after the etp all-gather; the stage adds
# exactly the costs it lists, the all-to-alls and sorts as counted by hand
AG, RS = "token all-gather over etp", "output reduce-scatter over etp"
OWN = "the level's own all-reduce of the experts' slots (taken out)"
for a, b in (("tp", "etp"), ("spantp", "spanetp"), ("tpfull", "etpfull")):
    c, d = costs(b), delta(a, b)
    n = 2 if b == "etpfull" else 1  # the rerun repeats the forward's
    for i, ph in enumerate(("fwd_cost", "bwd_cost")):
        assert near(d[ph], sum(v[i] for v in c.values()), sum(abs(v[i]) for v in c.values())), \
            (b, ph, d[ph], c)
    if b != "spanetp":
        assert near(c["token all-to-all"][0], 4 * a2a(131072)), c
        assert near(c["token all-to-all"][1], n * 4 * a2a(131072)), c
        assert near(c["probabilities all-to-all"][1], n * 2 * a2a(512)), c
    assert near(c["sorts by local expert"][1], n * 2 * sorts(512)), c
    # the dispatch's all-gather is the backward's reduce-scatter and the
    # combine's reduce-scatter the backward's all-gather (after the rerun's)
    assert near(c[AG][1], c[RS][0] + (n - 1) * c[AG][0]), c
    assert near(c[RS][1], c[AG][0] + (n - 1) * c[RS][0]), c
    assert c[OWN][0] < 0 and near(c[OWN][1], n * c[OWN][0]), c
# on its own group: the etp pair's all-gather of 2 x 131072 bytes a layer
# inside a host costs less than a ring over the network alone could (half
# the group's bytes over the link, one step's latency), across hosts at
# least that; the stored level's all-reduce, on the same GPUs, likewise
ring_net = 0.5 * 262144 / net_bw + net_lat
within, span = costs("etp"), costs("spanetp")
for k in (AG, RS):
    assert within[k][0] / 2 < ring_net <= span[k][0] / 2, (k, within[k], ring_net, span[k])
assert -within[OWN][0] / 2 < 2 * ring_net <= -span[OWN][0] / 2, (within[OWN], span[OWN])
# moe_a2a_overlap=1 without pipelining: the next micro-batch's forward
# beside the backward, two in flight (combined_1f1b.py), a micro-batch's
# activations more; the forward's all-to-alls hidden under the stored
# backward, the backward's under the stored forward (each longer here), the
# rest of the ep costs as they were
c, d = costs("etp"), delta("etp", "ov")
a2a_f = c["token all-to-all"][0] + c["probabilities all-to-all"][0]
a2a_b = c["token all-to-all"][1] + c["probabilities all-to-all"][1]
assert a2a_f < st["tp"]["bwd_cost"] and a2a_b < st["tp"]["fwd_cost"], (c, st["tp"])
assert near(d["fwd_cost"], -a2a_f) and near(d["bwd_cost"], -a2a_b), (d, a2a_f, a2a_b)
assert st["etp"]["in_flight"] == 1 and st["ov"]["in_flight"] == 2, (st["etp"], st["ov"])
assert st["ov"]["memory_needed"] > st["etp"]["memory_needed"], (st["etp"], st["ov"])
rep = json.load(open("%s/ovrep/report.json" % w))["stages"][0]
assert rep["memory_needed"] == st["ov"]["memory_needed"], (rep["memory_needed"], st["ov"])
print("full recompute: +%.6g s backward (own %.6g, rerun %.6g); etp=2 token all-gather a "
      "layer: %.6g s within a host, %.6g s across 2 (a network ring alone %.6g); the level's "
      "all-reduce taken out %.6g, %.6g" % (
          delta("plain", "full")["bwd_cost"], own, per + 2 * 5 * launch + 2 * gather, within[AG][0] / 2,
          span[AG][0] / 2, ring_net, within[OWN][0] / 2, span[OWN][0] / 2))
EOF
