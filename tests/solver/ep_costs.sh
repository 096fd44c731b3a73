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
# - with etp 2 the dispatcher all-gathers the routing probabilities over the
#   etp group after the all-to-all (and reduce-scatters their gradient in
#   the backward), and sorts etp x the slots;
# - apsolve lists every cost it added, one line each.
# Usage: ep_costs.sh APPROF APSOLVE PYTHON SQLITE3
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3 sq=$4
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

# every cost the full recomputation's stage added, listed with its rerun
for l in "token all-to-all of 131072 bytes per GPU, 4 forward and 8 backward (4 of them full recomputation's rerun) per micro-batch over 2 GPUs" \
  "probabilities all-to-all of 512 bytes per GPU, 2 forward and 4 backward (2 of them full recomputation's rerun) per micro-batch over 2 GPUs" \
  "token counts all-gather of 64 bytes per GPU, 2 forward and 2 backward (2 of them full recomputation's rerun) per micro-batch over 2 GPUs" \
  "sorts by local expert of 525312 bytes per GPU (memory copies), 2 forward and 4 backward (2 of them full recomputation's rerun) per micro-batch"; do
  grep -qF "expert parallelism, stage 0: $l" "$w/full.err" || fail_with "$w/full.err" "line: $l"
done
grep -q "in 4 costs (below)" "$w/full.err" || fail_with "$w/full.err" "the count of costs"
# and what it changed once per iteration and in memory: half of the
# 2 x 3 x 8 x 256 x 14336 expert weight elements leave a GPU, 88080384 x
# (2 + 2) bytes of weight and gradient buffer on the peak, x 12 (f32 master
# and two moments) in the initial state
grep -q "once per iteration -[0-9.e-]* s (the expert gradients reduced over 2 GPUs, Adam over their shard); memory -352321536 bytes on the peak, -1056964608 in the initial state" "$w/full.err" ||
  fail_with "$w/full.err" "the once-per-iteration and memory figures"
grep -qF "probabilities all-gather over etp of 512 bytes per GPU, 2 forward and 2 backward per micro-batch over 2 GPUs" "$w/etp.err" ||
  fail_with "$w/etp.err" "the etp all-gather line"
grep -q "in 5 costs (below)" "$w/etp.err" || fail_with "$w/etp.err" "the count of etp costs"

"$py" - "$w" "$bw" "$lat" "$mem" "$meff" <<'EOF' || fail "ep costs"
import json, sys
w = sys.argv[1]
bw, lat = float(sys.argv[2]) * 0.8, float(sys.argv[3])  # h100-sxm bus efficiency 0.8
rate = float(sys.argv[4]) * float(sys.argv[5])
st = {k: json.load(open("%s/%s.json" % (w, k)))["plans"][0]["stages"][0]
      for k in ("plain", "full", "tp", "etp")}
assert st["plain"]["recompute"] == st["full"]["recompute"] == "full", st["full"]["recompute"]
def a2a(b, n=2):  # Alpa's all-to-all: (n-1)/n^2 of the group's n x b bytes + (n-1) lat
    return (n - 1) / n**2 * (n * b) / bw + (n - 1) * lat
def sorts(rows):  # read + write the slots with their probabilities, then the output
    return (2 * rows * 257 * 2 + 2 * rows * 256 * 2) / rate
def delta(a, b):
    return {ph: st[b][ph] - st[a][ph] for ph in ("fwd_cost", "bwd_cost")}
# dp=4, micro-batch 4: 1 sample of 8 x 32 slots a GPU, 131072 bytes of tokens,
# 512 of probabilities; 2 MoE layers; tokens dispatched and combined, their
# gradients both ways in the backward
per = 2 * (2 * a2a(131072) + a2a(512) + sorts(256))
d = delta("plain", "full")
gather = (d["fwd_cost"] - per) / 2  # dropless: the token counts' all-gather
assert 0 < gather < 1e-4, gather
# full recomputation: the backward's own, and the rerun forward's
assert abs(d["bwd_cost"] - (per + d["fwd_cost"])) <= 1e-12, (d["bwd_cost"], per + d["fwd_cost"])
# etp 2 on dp=2,tp=2: a GPU's tokens are micro-batch 4 / 4 = 1 sample again,
# the sorts handle 2 x 256 rows after the etp all-gather; the probabilities'
# 2 x 512 bytes gathered over the etp pair forward, reduce-scattered backward
d = delta("tp", "etp")
own = 2 * (2 * a2a(131072) + a2a(512) + sorts(512))
rs = (d["bwd_cost"] - own) / 2
assert 1e-7 < rs < 1e-4, (d["bwd_cost"], own)
print("full recompute: +%.6g s backward (own %.6g, rerun %.6g); etp=2: probs reduce-scatter "
      "%.6g s a layer" % (d["bwd_cost"], per, per + 2 * gather, rs))
EOF
