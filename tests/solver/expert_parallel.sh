#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# apsolve --parallel ...,ep=E[,etp=T] (docs/expert-parallel.md) on a small
# Mixtral (2 blocks of 8 experts, top 2, hidden 256, expert FFN 14336,
# sequence 128) swept on 1x4 H100: ep=2 holds half the expert weights per
# GPU (their weights, gradients and Adam state: 16 bytes an element in
# bf16 mixed precision) and adds the token all-to-alls computed here by
# hand; the refusals (ep not dividing dp x tp or the experts, a model
# without experts, a sweep without its routing, ZeRO-2/3, inference).
# The stored plan records ep and etp, and apreport takes them from it
# (the placements of the level it was priced from keep the experts whole):
# the headline, the launch files and the memory apsolve stored.
# Usage: expert_parallel.sh APPROF APSOLVE PYTHON SQLITE3 APREPORT
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3 sq=$4 apreport=$5
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
db=$w/m.db
mix="--model mixtral --num-layers 2 --hidden 256 --heads 4 --seq-len 128 --vocab 1000"
# shellcheck disable=SC2086
"$approf" sweep --db "$db" $mix --cluster 1x4 --hardware h100-sxm --batch 16 \
  --micro-batches 4 --layers 2 >"$w/out" 2>&1 || fail_with "$w/out" "mixtral sweep"
# the routing the a2a is priced from: top 2, capacity ceil(1 x 128 x 2 / 8) = 32
"$sq" "$db" "select options from model" | grep -q '"moe_top_k":2,"moe_capacity":32' ||
  fail "the model's options do not record its routing: $("$sq" "$db" "select options from model")"

"$apsolve" --db "$db" --no-store --format json --parallel dp=4,tp=1,pp=1 >"$w/plain.json" \
  2>"$w/err" || fail_with "$w/err" "plain dp=4"
"$apsolve" --db "$db" --no-store --format json --parallel dp=4,tp=1,pp=1,ep=2 >"$w/ep.json" \
  2>"$w/err" || fail_with "$w/err" "dp=4,ep=2"
grep -q "expert parallelism ep=2 etp=1, stage 0 (layers 0-1): 2 MoE layers of 8 experts, 88080384 of their 176160768 weight elements per GPU" "$w/err" &&
  grep -q "expert parallelism, stage 0: token all-to-all of 131072 bytes per GPU, 4 forward and 4 backward per micro-batch over 2 GPUs" "$w/err" ||
  fail_with "$w/err" "the ep=2 figures"
bw=$("$sq" "$db" "select intra_host_bandwidth from hardware")
lat=$("$sq" "$db" "select intra_host_latency from hardware")
# the memory rate of the permutation copies: bandwidth x memory_efficiency
mem=$("$sq" "$db" "select memory_bandwidth from hardware")
meff=$("$sq" "$db" "select capabilities from hardware" |
  "$py" -c 'import json, sys; print(json.load(sys.stdin)["memory_efficiency"])')
launch=$("$sq" "$db" "select capabilities from hardware" |
  "$py" -c 'import json, sys; print(json.load(sys.stdin)["kernel_launch_overhead"])')
"$py" - "$w/plain.json" "$w/ep.json" "$bw" "$lat" "$mem" "$meff" "$launch" <<'EOF' || fail "ep=2 pricing"
import json, sys
plain = json.load(open(sys.argv[1]))["plans"][0]["stages"][0]
ep = json.load(open(sys.argv[2]))["plans"][0]["stages"][0]
bw, lat = float(sys.argv[3]) * 0.8, float(sys.argv[4])  # h100-sxm bus efficiency 0.8
rate = float(sys.argv[5]) * float(sys.argv[6])
# expert weights: 2 blocks x (gate, up, down) x 8 x 256 x 14336 elements; ep=2
# keeps half of them on a GPU, 16 bytes each (bf16 weight and gradient, f32
# master and two moments)
half = 2 * 3 * 8 * 256 * 14336 // 2
assert half == 88080384
assert plain["in_flight"] == ep["in_flight"] == 1
got = plain["memory_needed"] - ep["memory_needed"]
assert got == 16 * half, (got, 16 * half)
# the tokens: micro-batch 4 over dp 4 = 1 sample of 8 experts x 32 slots x
# 256 hidden x 2 bytes = 131072 bytes a GPU sends to the other (half) and
# back, per MoE layer; forward: dispatch + combine; backward: their gradients.
# Alpa's all-to-all formula: (n-1)/n^2 of the group's n x 131072 bytes + (n-1) lat
n, b = 2, 1 * 8 * 32 * 256 * 2
a2a = (n - 1) / n**2 * (n * b) / bw + (n - 1) * lat
# Megatron-Core's MoEAlltoAllTokenDispatcher (core_v0.19.0) also sends the
# 256 slots' routing probabilities (bf16, the router's dtype: 512 bytes) in
# an all-to-all of their own, forward (token_dispatch) and backward
bp = 1 * 8 * 32 * 2
a2ap = (n - 1) / n**2 * (n * bp) / bw + (n - 1) * lat
# with 8 / 2 = 4 local experts the 256 received slots are sorted by local
# expert with their probabilities (read + write 256 x 257 x 2 bytes), the
# experts' output sorted back (256 x 256 x 2); the backward sorts their
# gradients
perm = (2 * 256 * 257 * 2 + 2 * 256 * 256 * 2) / rate
d = {ph: ep[ph] - plain[ph] for ph in ("fwd_cost", "bwd_cost")}
# TE GroupedLinear's per-expert GEMMs: 6 x 4 a layer against the level's 9
# batched kernels (3 forward, 6 backward), one launch each
launch = float(sys.argv[7])
per = 2 * (2 * a2a + a2ap + perm)  # 2 MoE layers
d["fwd_cost"] -= 2 * (2 * 4 - 3) * launch
d["bwd_cost"] -= 2 * (4 * 4 - 6) * launch
assert abs(d["bwd_cost"] - per) <= 1e-12, (d["bwd_cost"], per)
# dropless (capacity 32 = ceil(128 x 2 / 8)): the forward also all-gathers
# each rank's 8 token counts (int64) over the ep group before the
# all-to-all, NCCL-priced: a latency-bound few microseconds per layer
gather = (d["fwd_cost"] - per) / 2
assert 0 < gather < 1e-4, gather
assert abs(ep["cost"] - plain["cost"] - d["fwd_cost"] - d["bwd_cost"] - 30 * launch) <= 1e-12
print("ep=2: memory -%d bytes, a2a %.6g s, probs %.6g s, sorts %.6g s, counts %.6g s each"
      % (got, a2a, a2ap, perm, gather))
EOF

# with context parallelism (docs/context-parallel.md): the entries are those
# of dp x cp = 4 replicas at micro-batch 4, a cp GPU holds half a sample's
# 128 tokens, so each all-to-all moves half the bytes: 65536; the expert
# state per GPU halves as without cp
"$apsolve" --db "$db" --no-store --format json --parallel dp=2,tp=1,pp=1,cp=2 \
  >"$w/cp.json" 2>"$w/err" || fail_with "$w/err" "cp=2"
"$apsolve" --db "$db" --no-store --format json --parallel dp=2,tp=1,pp=1,cp=2,ep=2 \
  >"$w/cpep.json" 2>"$w/err" || fail_with "$w/err" "cp=2,ep=2"
grep -q "token all-to-all of 65536 bytes per GPU, 4 forward and 4 backward per micro-batch over 2 GPUs" "$w/err" ||
  fail_with "$w/err" "the cp=2,ep=2 figures"
"$py" - "$w/cp.json" "$w/cpep.json" "$bw" "$lat" "$mem" "$meff" "$launch" <<'EOF' || fail "cp=2,ep=2 pricing"
import json, sys
cp = json.load(open(sys.argv[1]))["plans"][0]["stages"][0]
ep = json.load(open(sys.argv[2]))["plans"][0]["stages"][0]
bw, lat = float(sys.argv[3]) * 0.8, float(sys.argv[4])
rate = float(sys.argv[5]) * float(sys.argv[6])
assert cp["memory_needed"] - ep["memory_needed"] == 16 * 88080384
n, b, bp, rows = 2, 1 * 8 * 32 * 256 * 2 // 2, 1 * 8 * 32 * 2 // 2, 128
a2a = (n - 1) / n**2 * (n * b) / bw + (n - 1) * lat
a2ap = (n - 1) / n**2 * (n * bp) / bw + (n - 1) * lat
perm = (2 * rows * 257 * 2 + 2 * rows * 256 * 2) / rate
per = 2 * (2 * a2a + a2ap + perm)
# the per-expert GEMMs' launches, as many as without cp (ep=2 above)
launch = float(sys.argv[7])
own = per + 2 * 10 * launch
assert abs(ep["bwd_cost"] - cp["bwd_cost"] - own) <= 1e-12, (ep["bwd_cost"] - cp["bwd_cost"], own)
assert 0 < (ep["fwd_cost"] - cp["fwd_cost"] - per - 2 * 5 * launch) / 2 < 1e-4
EOF
# stored, cp=2,ep=2 is re-priced by apsolve --plan through both steps,
# to the same objective and memory (the plan is removed again)
"$apsolve" --db "$db" --quiet --parallel dp=2,tp=1,pp=1,cp=2,ep=2 >/dev/null 2>"$w/err" ||
  fail_with "$w/err" "storing the cp=2,ep=2 plan"
cpid=$("$sq" "$db" "select max(id) from plan")
"$apsolve" --db "$db" --quiet --format json --plan "$cpid" >"$w/again.json" 2>"$w/err" ||
  fail_with "$w/err" "apsolve --plan of the cp=2,ep=2 plan"
"$py" - "$w/cpep.json" "$w/again.json" <<'EOF' || fail "--plan of the cp=2,ep=2 plan"
import json, sys
a = json.load(open(sys.argv[1]))["plans"][0]
b = json.load(open(sys.argv[2]))
assert b["total_cost"] == a["total_cost"], (a["total_cost"], b["total_cost"])
assert [s["memory_needed"] for s in b["stages"]] == [s["memory_needed"] for s in a["stages"]]
EOF
"$sq" "$db" "delete from plan_stage where plan_id = $cpid; delete from plan where id = $cpid" ||
  fail "removing the cp=2,ep=2 plan"

# the stored plan, its report and launch files
"$apsolve" --db "$db" --quiet --parallel dp=4,tp=1,pp=1,ep=2 >/dev/null 2>"$w/err" ||
  fail_with "$w/err" "storing the ep=2 plan"
"$sq" "$db" "select options from plan" | grep -q '"ep": 2, "etp": 1}' ||
  fail "the stored options lack ep and etp: $("$sq" "$db" "select options from plan")"
"$apreport" --db "$db" --out "$w/r" --name ep --quiet 2>"$w/err" || fail_with "$w/err" "apreport"
grep -qx -- '--expert-model-parallel-size 2' "$w/r/ep_megatron.args" ||
  fail_with "$w/r/ep_megatron.args" "Megatron's ep is not the plan's"
grep -qx -- '--expert-tensor-parallel-size 1' "$w/r/ep_megatron.args" ||
  fail_with "$w/r/ep_megatron.args" "Megatron's etp is not the plan's"
grep -qx 'expert_parallel_degree = 2' "$w/r/ep_torchtitan.toml" ||
  fail_with "$w/r/ep_torchtitan.toml" "torchtitan's ep is not the plan's"
grep -q 'MoE(ep_size=2)' "$w/r/ep_deepspeed.json" ||
  fail_with "$w/r/ep_deepspeed.json" "DeepSpeed's ep_size is not the plan's"
"$py" - "$w/r/report.json" "$("$sq" "$db" "select memory_needed from plan_stage")" <<'EOF' ||
import json, sys
r = json.load(open(sys.argv[1]))
assert "experts on ep 2 x etp 1" in r["headline"]["layout"], r["headline"]["layout"]
got = r["stages"][0]["memory_needed"]
assert got == int(sys.argv[2]), (got, sys.argv[2])
EOF
  fail "report.json: the ep layout or apsolve's memory"
# apsolve --plan re-prices the stored plan as it was stored
"$apsolve" --db "$db" --plan 1 --format json >"$w/again.json" 2>"$w/err" ||
  fail_with "$w/err" "apsolve --plan 1"
"$py" - "$w/again.json" "$w/ep.json" <<'EOF' || fail "--plan 1 is not the ep plan's price"
import json, sys
again = json.load(open(sys.argv[1]))
ep = json.load(open(sys.argv[2]))["plans"][0]
assert again["stages"][0]["memory_needed"] == ep["stages"][0]["memory_needed"]
assert abs(again["cost"] - ep["cost"]) <= 1e-15, (again["cost"], ep["cost"])
EOF

# a capacity factor (1.5: capacity ceil(1.5 x 128 x 2 / 8) = 48): Megatron's
# dispatcher drops and pads to the capacity, its all-to-all splits are
# fixed and no token counts are gathered, so the forward adds what the
# backward does; the tokens, probabilities and sorts at 48 slots an expert
# (a sweep takes the factor from a model file)
# shellcheck disable=SC2086
"$approf" model export mixtral ${mix#--model mixtral } --capacity-factor 1.5 --batch 4 >"$w/cf.json" 2>"$w/err" ||
  fail_with "$w/err" "mixtral export at capacity factor 1.5"
"$approf" sweep --db "$w/cf.db" --model-file "$w/cf.json" --cluster 1x4 --hardware h100-sxm \
  --batch 16 --micro-batches 4 --layers 2 >"$w/out" 2>&1 ||
  fail_with "$w/out" "mixtral sweep at capacity factor 1.5"
"$sq" "$w/cf.db" "select options from model" | grep -q '"moe_top_k":2,"moe_capacity":48' ||
  fail "capacity factor 1.5: $("$sq" "$w/cf.db" "select options from model")"
"$apsolve" --db "$w/cf.db" --no-store --format json --parallel dp=4,tp=1,pp=1 >"$w/cfplain.json" \
  2>"$w/err" || fail_with "$w/err" "capacity factor 1.5: plain dp=4"
"$apsolve" --db "$w/cf.db" --no-store --format json --parallel dp=4,tp=1,pp=1,ep=2 \
  >"$w/cfep.json" 2>"$w/err" || fail_with "$w/err" "capacity factor 1.5: dp=4,ep=2"
"$py" - "$w/cfplain.json" "$w/cfep.json" "$bw" "$lat" "$mem" "$meff" "$launch" <<'EOF' ||
import json, sys
plain = json.load(open(sys.argv[1]))["plans"][0]["stages"][0]
ep = json.load(open(sys.argv[2]))["plans"][0]["stages"][0]
bw, lat = float(sys.argv[3]) * 0.8, float(sys.argv[4])
rate = float(sys.argv[5]) * float(sys.argv[6])
n, slots = 2, 1 * 8 * 48
a2a = (n - 1) / n**2 * (n * slots * 256 * 2) / bw + (n - 1) * lat
a2ap = (n - 1) / n**2 * (n * slots * 2) / bw + (n - 1) * lat
perm = (2 * slots * 257 * 2 + 2 * slots * 256 * 2) / rate
per = 2 * (2 * a2a + a2ap + perm)
launch = float(sys.argv[7])  # and the per-expert GEMMs' launches (ep=2 above)
for ph, k in (("fwd_cost", 10), ("bwd_cost", 20)):
    want = per + k * launch
    assert abs(ep[ph] - plain[ph] - want) <= 1e-12, (ph, ep[ph] - plain[ph], want)
EOF
  fail "capacity factor 1.5: ep=2 pricing"

# refusals
"$apsolve" --db "$db" --no-store --parallel dp=4,tp=1,pp=1,ep=3 >/dev/null 2>"$w/err"
expect_rc 2 $? "$w/err" "ep=3 on dp x tp = 4"
grep -q "etp x ep = 3 does not divide dp x tp = 4" "$w/err" || fail_with "$w/err" "ep=3 message"
# etp=2 on tp=1: no level splits the experts' in/out dimensions; the
# message says what the stored levels can price
"$apsolve" --db "$db" --no-store --parallel dp=4,tp=1,pp=1,ep=2,etp=2 >/dev/null 2>"$w/err"
expect_rc 2 $? "$w/err" "etp=2 that no level stores"
grep -q "its levels can price: etp=1 (any ep)" "$w/err" || fail_with "$w/err" "etp=2 message"
"$apsolve" --db "$db" --no-store --parallel dp=4,tp=1,pp=1,ep=2,zero=2 >/dev/null 2>"$w/err"
expect_rc 2 $? "$w/err" "ep with zero=2"
grep -q "ZeRO-1" "$w/err" || fail_with "$w/err" "zero=2 message"
"$apsolve" --db "$db" --no-store --inference --parallel dp=4,tp=1,pp=1,ep=2 >/dev/null \
  2>"$w/err"
expect_rc 2 $? "$w/err" "ep with --inference"
cp "$db" "$w/old.db"
"$sq" "$w/old.db" "update model set options = '{\"preset\":\"\",\"dataset\":\"\",\"model_file\":\"\"}'"
"$apsolve" --db "$w/old.db" --no-store --parallel dp=4,tp=1,pp=1,ep=2 >/dev/null 2>"$w/err"
expect_rc 2 $? "$w/err" "a sweep without its routing"
grep -q "records no routing" "$w/err" || fail_with "$w/err" "no routing message"

# a model without experts
"$approf" sweep --db "$w/l.db" --model llama --num-layers 2 --hidden 256 --heads 4 \
  --seq-len 128 --vocab 1000 --cluster 1x4 --hardware h100-sxm --batch 16 --micro-batches 4 \
  --layers 2 >"$w/out" 2>&1 || fail_with "$w/out" "llama sweep"
"$apsolve" --db "$w/l.db" --no-store --parallel dp=4,tp=1,pp=1,ep=2 >/dev/null 2>"$w/err"
expect_rc 2 $? "$w/err" "ep on a dense model"
grep -q "the model has none" "$w/err" || fail_with "$w/err" "dense model message"

# ep must divide the experts: a Qwen3-MoE of 6 experts on dp=4, ep=4
cat >"$w/q.json" <<'EOF'
{"model_type": "qwen3_moe", "num_hidden_layers": 2, "hidden_size": 128,
 "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
 "intermediate_size": 256, "moe_intermediate_size": 64, "num_experts": 6,
 "num_experts_per_tok": 2, "vocab_size": 512, "max_position_embeddings": 256}
EOF
"$approf" sweep --db "$w/q.db" --hf-config "$w/q.json" --seq-len 64 --cluster 1x4 \
  --hardware h100-sxm --batch 16 --micro-batches 4 --layers 2 >"$w/out" 2>&1 ||
  fail_with "$w/out" "qwen3_moe sweep"
"$apsolve" --db "$w/q.db" --no-store --parallel dp=4,tp=1,pp=1,ep=4 >/dev/null 2>"$w/err"
expect_rc 2 $? "$w/err" "ep=4 of 6 experts"
grep -q "ep=4 does not divide the 6 experts" "$w/err" || fail_with "$w/err" "experts message"
"$apsolve" --db "$w/q.db" --no-store --parallel dp=4,tp=1,pp=1,ep=2 >/dev/null 2>"$w/err" ||
  fail_with "$w/err" "ep=2 of 6 experts"
echo "ok"
