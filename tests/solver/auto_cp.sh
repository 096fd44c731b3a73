#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Context parallelism in the auto search (solver/session_autocp.c,
# docs/solver.md "Context parallelism in the auto search"):
# - Llama-3-8B with 8 blocks at sequence 32768 on 1x8 H100, global batch 16
#   in 2 micro-batches of 8: no plan without cp fits (one sample of 32768
#   tokens per GPU holds too many activations) but one stage offloading 2
#   of its 4 layers' activations (session_autooffload.c); the cp=2 plan
#   beats it; the auto plan takes it, says the candidates it tried, stores cp in its
#   options, and apreport's headline and Megatron file follow (the file
#   passes check_launch.py against the Megatron manifest).
# - Llama with 2 blocks at sequence 2048 with micro-batch sizes 16,8,4,2
#   and ResNet-50: the auto plan has no cp, says nothing of it, and is the
#   same plan as with cp out of reach (every cp entry at micro-batch m is
#   the same work as the plain entry at m / cp, which the plain search has).
# - Ulysses (cp_comm a2a) where the heads rule passes and it sends less.
# - the K/V all-gather (cp_comm all_gather) tried, priced as --parallel.
# Usage: auto_cp.sh APPROF APSOLVE APREPORT PYTHON MANIFESTS CHECK_LAUNCH
# The sweeps of models whose training state fits one device profile Alpa's
# plain space (--variants alpa), the space these scenarios were built on;
# the default's ZeRO variants (docs/variants.md, "The default space") would
# win some of them without cp or ep.
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 apreport=$3 py=$4 man=$5 check=$6
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT

"$approf" sweep --db "$w/long.db" --quiet --variants alpa --model llama --preset llama-3-8b --num-layers 8 \
  --layers 4 --seq-len 32768 --cluster 1x8 --hardware h100-sxm --batch 16 --micro-batches 2 \
  >"$w/out" 2>&1 || fail_with "$w/out" "long llama sweep"
"$apsolve" --db "$w/long.db" >"$w/out" 2>"$w/err" || fail_with "$w/err" "apsolve long"
grep -q "^apsolve: context parallelism cp=2 on micro-batch size 8 (sweep 1, 4 micro-batches of 4): objective" "$w/err" ||
  fail_with "$w/err" "the cp=2 candidate line"
grep -q "^apsolve: context parallelism cp=8 on micro-batch size 8 (sweep 1, 16 micro-batches of 1)" "$w/err" ||
  fail_with "$w/err" "the cp=8 candidate line"
grep -q "^apsolve: activation offload: N = 2: objective .* (no plan fits without it)$" "$w/err" &&
  grep -q "^apsolve: context parallelism cp=2 wins: objective .* against .* for the best plan without cp$" "$w/err" ||
  fail_with "$w/err" "why cp won"
grep -q "^Batch: global batch 16 = 4 micro-batches x micro-batch size 4$" "$w/out" ||
  fail_with "$w/out" "the cp plan's batch"
# the plan's own text says cp, as apreport's headline does
grep -q "^Context parallelism: cp 2 (the ring, p2p) on every stage" "$w/out" ||
  fail_with "$w/out" "apsolve's plan text does not say cp"
id=$(sed -n 's/^Stored as plan \([0-9]*\)$/\1/p' "$w/out")
[ -n "$id" ] || fail_with "$w/out" "no plan stored"
"$py" - "$w/long.db" "$id" <<'PY' || fail "the stored options"
import json, sqlite3, sys
o = json.loads(sqlite3.connect(sys.argv[1]).execute(
    "SELECT options FROM plan WHERE id = ?", (int(sys.argv[2]),)).fetchone()[0])
p = o.get("parallel", {})
assert o["stage_option"] == "auto", o
assert p.get("cp") == 2 and p.get("cp_comm") == "p2p", o
assert (p["dp"], p["tp"], p["pp"]) == (4, 1, 1), o
assert o["micro_batches"] == 4 and o["micro_batch_size"] == 4, o
PY
# Megatron's cp_comm=all_gather (Transformer Engine's K/V all-gather) is a
# candidate too, its heads not needed; its best plan is the --parallel plan
# of dp=4 x cp=2 with cp_comm=all_gather, priced alike. It does not beat the
# ring: the same K/V bytes in 2 all-gathers forward (the ring: 1 send-recv
# at cp 2) and 2 all-gathers + 2 reduce-scatters backward (the ring: 2
# send-recvs), more latency, buffers as large
sed -n 's/^apsolve: context parallelism cp=2 cp_comm=all_gather on micro-batch size 8 (sweep 1, 4 micro-batches of 4): its best plan of any layouts (objective \([0-9.]*\) s) does not beat.*/\1/p' \
  "$w/err" >"$w/ag"
[ -s "$w/ag" ] || fail_with "$w/err" "the cp=2 all_gather candidate line"
"$apsolve" --db "$w/long.db" --no-store --parallel dp=4,tp=1,pp=1,cp=2,cp_comm=all_gather \
  >"$w/agpar" 2>"$w/err2" || fail_with "$w/err2" "--parallel cp_comm=all_gather"
grep -q "^Objective (full): $(cat "$w/ag") s = " "$w/agpar" ||
  fail "the all_gather candidate $(cat "$w/ag") s is not the --parallel plan's: $(grep '^Objective' "$w/agpar")"
# torchtitan runs the ring and the K/V all-gather (its rotate methods):
# --framework torchtitan prices both cp=2 layouts (dp 4 x cp 2, the one
# whose samples fit)
"$apsolve" --db "$w/long.db" --no-store --framework torchtitan >/dev/null 2>"$w/err2" ||
  fail_with "$w/err2" "--framework torchtitan (long)"
grep -q "^apsolve: --framework torchtitan: [0-9]* layouts, 2 priced as run, 2 run by torchtitan as priced" "$w/err2" ||
  fail_with "$w/err2" "--framework torchtitan does not try all_gather"
mkdir -p "$w/f"
"$apreport" --db "$w/long.db" --plan "$id" --name a --out "$w/f" --quiet 2>"$w/err" ||
  fail_with "$w/err" "apreport"
grep -q '"layout": "dp 4 x tp 1 x pp 1 x cp 2 (p2p), 4 micro-batches of 1 sample per replica' \
  "$w/f/report.json" || fail "apreport's headline: $(grep -o '"layout": "[^"]*"' "$w/f/report.json")"
grep -q '^--context-parallel-size 2$' "$w/f/a_megatron.args" || fail_with "$w/f/a_megatron.args" "cp size"
"$py" "$check" "$man/megatron-lm-core_v0.19.0.json" "$w/f/a_megatron.args" >"$w/chk" 2>&1 ||
  fail_with "$w/chk" "the Megatron file of the cp auto plan"

# Ulysses (a2a) where the heads rule passes: a Llama of 8 blocks with as
# many key/value heads as query heads (32, a Hugging Face config) at
# sequence 40960: the all-to-alls move Q, K, V and the output once, the
# ring K and V, so a2a sends less at cp 2 and wins (cp 2 ring 3.01838 s,
# cp 2 a2a 2.98004 s; the ring's kernels over 20480 keys price at h100-sxm's
# figure for that length, a2a's at 40960 keys at the table's top); the plan is the --parallel plan of its layout with
# cp_comm=a2a priced alike, its text, JSON and stored options say a2a,
# only Megatron-LM runs it, and apreport's Megatron file sets
# --cp-comm-type a2a and passes check_launch.py
cat >"$w/mha.json" <<'EOF2'
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
 "intermediate_size": 11008, "num_attention_heads": 32, "num_key_value_heads": 32,
 "num_hidden_layers": 8, "vocab_size": 32000, "max_position_embeddings": 40960,
 "rms_norm_eps": 1e-5, "torch_dtype": "bfloat16"}
EOF2
"$approf" sweep --db "$w/mha.db" --quiet --variants alpa --hf-config "$w/mha.json" --layers 4 --seq-len 40960 \
  --cluster 1x8 --hardware h100-sxm --batch 16 --micro-batches 2 >"$w/out" 2>&1 ||
  fail_with "$w/out" "MHA llama sweep"
"$apsolve" --db "$w/mha.db" --format json >"$w/mha-auto.json" 2>"$w/err" ||
  fail_with "$w/err" "apsolve MHA"
grep -q "^apsolve: context parallelism cp=2 cp_comm=a2a on micro-batch size 8 (sweep 1, 4 micro-batches of 4): objective" "$w/err" ||
  fail_with "$w/err" "the cp=2 a2a candidate line"
"$apsolve" --db "$w/mha.db" --no-store --format json --parallel dp=4,tp=1,pp=1,cp=2,cp_comm=a2a \
  >"$w/mha-par.json" 2>"$w/err" || fail_with "$w/err" "apsolve MHA --parallel a2a"
"$apsolve" --db "$w/mha.db" --no-store --format json --plan 1 >"$w/mha-again.json" 2>"$w/err" ||
  fail_with "$w/err" "apsolve MHA --plan 1"
grep -q "the a2a sends" "$w/err" || fail_with "$w/err" "--plan 1 prices a2a"
"$apsolve" --db "$w/mha.db" --no-store >"$w/mha-text" 2>"$w/err" || fail_with "$w/err" "apsolve MHA text"
grep -q "^Context parallelism: cp 2 (all-to-all, a2a) on every stage" "$w/mha-text" ||
  fail_with "$w/mha-text" "the plan text does not say a2a"
"$py" - "$w/mha-auto.json" "$w/mha-par.json" "$w/mha.db" "$w/mha-again.json" <<'PY' || fail "the a2a auto plan"
import json, sqlite3, sys
def plan(path):
    d = json.load(open(path))
    return d["plans"][0] if "plans" in d else d
auto, par = plan(sys.argv[1]), plan(sys.argv[2])
assert (auto.get("cp"), auto.get("cp_comm")) == (2, "a2a"), (auto.get("cp"), auto.get("cp_comm"))
assert auto["frameworks"]["runs"] == ["megatron"], auto["frameworks"]
assert auto["cost"] == par["cost"] and auto["total_cost"] == par["total_cost"], (auto["cost"], par["cost"])
again = plan(sys.argv[4])
assert again["cost"] == auto["cost"], (again["cost"], auto["cost"])
o = json.loads(sqlite3.connect(sys.argv[3]).execute(
    "SELECT options FROM plan WHERE id = ?", (auto["plan_id"],)).fetchone()[0])
assert o["parallel"]["cp"] == 2 and o["parallel"]["cp_comm"] == "a2a", o
print("cp 2 a2a %.9g s" % auto["total_cost"])
PY
mkdir -p "$w/m"
"$apreport" --db "$w/mha.db" --plan 1 --name a --out "$w/m" --quiet 2>"$w/err" ||
  fail_with "$w/err" "apreport MHA"
grep -q '^--cp-comm-type a2a$' "$w/m/a_megatron.args" || fail_with "$w/m/a_megatron.args" "cp comm type"
"$py" "$check" "$man/megatron-lm-core_v0.19.0.json" "$w/m/a_megatron.args" >"$w/chk" 2>&1 ||
  fail_with "$w/chk" "the Megatron file of the a2a auto plan"
# --framework megatron searches the a2a layouts too and takes the same
# plan (2.95844 s: its fused attention over all 40960 keys at h100-sxm's
# 0.484 of the peak, the cuDNN table's 32k figure, where the flat 0.4 gave
# 3.29596 s, 1.944 s of attention 0.4 / 0.484 as long); torchtitan runs the ring only (its context parallelism is ring
# attention), so its best is the ring's
"$apsolve" --db "$w/mha.db" --no-store --framework megatron >"$w/out" 2>"$w/err" ||
  fail_with "$w/err" "--framework megatron (MHA)"
grep -q "^apsolve: --framework megatron: .* best dp=4,tp=1,pp=1,zero=0,recompute=none,mbs=1,cp=2,cp_comm=a2a in " "$w/err" ||
  fail_with "$w/err" "--framework megatron's a2a layout"
grep -q "^Estimated iteration latency: 2.95844 s" "$w/out" || fail_with "$w/out" "--framework megatron's price"
"$apsolve" --db "$w/mha.db" --no-store --framework torchtitan >"$w/out" 2>"$w/err" ||
  fail_with "$w/err" "--framework torchtitan (MHA)"
grep -q "^apsolve: --framework torchtitan: .* best dp=4,tp=1,pp=1,zero=0,recompute=none,mbs=1,cp=2 in " "$w/err" ||
  fail_with "$w/err" "--framework torchtitan's ring layout"

# where cp does not pay: no cp lines, no cp option, the same plan text
"$approf" sweep --db "$w/short.db" --quiet --variants alpa --model llama --preset llama-3-8b --num-layers 2 \
  --layers 2 --seq-len 2048 --cluster 1x8 --hardware h100-sxm --batch 16 \
  --micro-batch-sizes 16,8,4,2 >"$w/out" 2>&1 || fail_with "$w/out" "short llama sweep"
"$approf" sweep --db "$w/r.db" --quiet --variants alpa --model resnet50 --cluster 1x4 --hardware h100-sxm \
  --batch 32 --micro-batches 2 >"$w/out" 2>&1 || fail_with "$w/out" "resnet50 sweep"
for d in short r; do
  "$apsolve" --db "$w/$d.db" >"$w/out" 2>"$w/err" || fail_with "$w/err" "apsolve $d"
  if grep -q "context parallelism" "$w/err"; then fail_with "$w/err" "$d: cp lines"; fi
  if grep -q "^Context parallelism" "$w/out"; then fail_with "$w/out" "$d: cp in the plan"; fi
  "$py" -c "import sqlite3,sys; o=sqlite3.connect(sys.argv[1]).execute('select options from plan').fetchone()[0]; sys.exit('\"cp\"' in o)" "$w/$d.db" ||
    fail "$d: the stored plan has cp"
done
echo "ok"
