#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Bring a Mixtral-style model, leave with a runnable config (issue "Bring
# your own model"): a Hugging Face config.json (mixtral, 8 experts, top-2,
# shrunk to 2 layers) -> a sweep on 2x8 -> apsolve's auto plan splits the
# experts over devices (expert parallelism, its all-to-all priced by the
# sharding ILP) -> apreport's Megatron, DeepSpeed and torchtitan files carry
# the expert-parallel size, and the Megatron file the config's heads, query
# groups, rotary base and router top-k.
# Usage: moe_e2e.sh APPROF APSOLVE APREPORT MIXTRAL_CONFIG WORKDIR
set -u
approf=$1 apsolve=$2 apreport=$3 base=$4 work=$5
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"
python3 - "$base" "$work/mx.json" <<'PY' || fail "writing the config"
import json, sys
d = json.load(open(sys.argv[1]))
d.update({"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 2,
          "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 8000,
          "max_position_embeddings": 1024})
json.dump(d, open(sys.argv[2], "w"))
PY
"$approf" sweep --hf-config "$work/mx.json" --layers 2 --cluster 2x8 --dtype bf16 --batch 64 \
  --micro-batches 4 --memory-levels 2 --backend model --quiet --db "$work/mx.db" 2>"$work/sweep.err" ||
  fail_with "$work/sweep.err" "sweep"
"$apsolve" --db "$work/mx.db" --quiet >"$work/plan.txt" 2>&1 || fail_with "$work/plan.txt" "apsolve"
"$apreport" --db "$work/mx.db" --out "$work/out" --name mx >/dev/null 2>"$work/rep.err" ||
  fail_with "$work/rep.err" "apreport"
ep=$(sed -n 's/^--expert-model-parallel-size \([0-9]*\)$/\1/p' "$work/out/mx_megatron.args")
[ -n "$ep" ] && [ "$ep" -ge 2 ] ||
  fail_with "$work/plan.txt" "the auto plan does not split the experts (expert parallel size '$ep')"
grep -q -- "--num-experts 8" "$work/out/mx_megatron.args" || fail "megatron: --num-experts"
# what only the config says, stored by the sweep: heads, key/value heads,
# rope_theta (mixtral-8x7b.json: 1000000.0), the router's top-k
for a in "--num-attention-heads 16" "--num-query-groups 4" "--rotary-base 1000000" \
         "--moe-router-topk 2" "--max-position-embeddings 1024"; do
  grep -qx -- "$a" "$work/out/mx_megatron.args" || fail_with "$work/out/mx_megatron.args" "megatron: no '$a'"
done
grep -q "expert_parallel_degree = $ep" "$work/out/mx_torchtitan.toml" || fail "torchtitan: expert degree"
# DeepSpeed's MoE layer takes its ep ranks from the data-parallel group
# and splits the experts over all tp ranks or none (docs/export-deepspeed.md):
# the file carries ep_size, or says it cannot run that split as priced
grep -q "ep_size=$ep" "$work/out/mx_deepspeed.json" ||
  grep -q "cannot run experts on ep $ep" "$work/out/mx_deepspeed.json" ||
  fail_with "$work/out/mx_deepspeed.json" "deepspeed: neither ep_size nor why not"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/out/mx_deepspeed.json" ||
  fail "deepspeed JSON"
echo "ok: expert parallel size $ep"
