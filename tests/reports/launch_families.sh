#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The Megatron-LM files of the Hugging Face families that have zoo names
# of their own (docs/export-megatron.md, "Model architecture"): for a small
# sweep of one preset of each (qwen3, qwen3_moe, gemma, gemma2, gemma3,
# phi3, olmo2, starcoder2, gpt_neox, falcon, deepseek V2 and V3, llama4
# Scout and Maverick) the file must pass the Megatron-LM manifest, carry
# the family's architecture flags and say what Megatron-LM cannot express;
# its heads, head width and query groups must be the zoo graph's; and
# each file with one architecture flag removed (or a wrong one added)
# must fail the manifest's rule for that model.
#   launch_families.sh APPROF APSOLVE APREPORT PYTHON MANIFEST_DIR
set -eu
approf=$1 apsolve=$2 apreport=$3 python=$4 manifests=$5
check=$(dirname "$0")/check_launch.py
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/../lib.sh"
meg=$manifests/megatron-lm-core_v0.19.0.json
mkdir -p "$dir/f"

# family NAME MODEL PRESET LAYERS PARALLEL [CLUSTER]: sweep, plan, Megatron file
family() {
  name=$1 model=$2 preset=$3 layers=$4 par=$5 cluster=${6:-1x4}
  "$approf" sweep --model "$model" --preset "$preset" --num-layers "$layers" --manual-boundaries \
    --manual-layers --cluster "$cluster" --micro-batches 4 --dtype bf16 --hardware a100-80g \
    --backend model --db "$dir/$name.db" --quiet >/dev/null 2>"$dir/err" ||
    fail_with "$dir/err" "approf sweep $model $preset"
  # the files' model flags are the point, not whether a stage fits: every
  # plan gets a budget that holds DeepSeek-V3's and Maverick's experts
  "$apsolve" --db "$dir/$name.db" --parallel "$par" --memory-budget 16T >"$dir/out" 2>"$dir/err" ||
    fail_with "$dir/err" "apsolve $model"
  id=$(sed -n 's/^Stored as plan \([0-9]*\)$/\1/p' "$dir/out" | head -1)
  [ -n "$id" ] || fail_with "$dir/out" "apsolve $model: no plan stored"
  "$apreport" --db "$dir/$name.db" --plan "$id" --name "$name" --out "$dir/f" --quiet \
    2>"$dir/err" || fail_with "$dir/err" "apreport $name"
  f=$dir/f/${name}_megatron.args
  rc=0
  "$python" "$check" "$meg" "$f" >"$dir/check.out" 2>&1 || rc=$?
  [ "$rc" = 0 ] || fail_with "$dir/check.out" "$name ($model $preset): exit $rc"
  grep -qx "# launch context: model=$model" "$f" || fail_with "$f" "$name: no model context"
  # the heads, head width and query groups are the zoo graph's (its
  # split_heads reshapes: q [B, S, kv, group, d], k [B, S, kv, d])
  case $model in deepseek) return 0 ;; esac
  "$approf" model export "$model" --preset "$preset" --num-layers 1 >"$dir/model.json" \
    2>"$dir/err" || fail_with "$dir/err" "approf model export $model --preset $preset"
  "$python" - "$dir/model.json" "$f" <<'PY' || fail "$name: heads differ from the zoo's"
import json, math, shlex, sys
ops = json.load(open(sys.argv[1]))["ops"]
q = next(o for o in ops if o["op"] == "reshape" and o["name"].endswith("q_proj/split_heads"))
k = next(o for o in ops if o["op"] == "reshape" and o["name"].endswith("k_proj/split_heads"))
heads = math.prod(q["outputs"][0]["shape"][2:-1])
d = q["outputs"][0]["shape"][-1]
groups = k["outputs"][0]["shape"][2]
w = shlex.split(open(sys.argv[2]).read(), comments=True)
a = {w[i]: (w[i + 1] if i + 1 < len(w) and not w[i + 1].startswith("--") else True)
     for i in range(len(w)) if w[i].startswith("--")}
h = int(a["--num-attention-heads"])
assert h == heads, (h, heads)
assert int(a.get("--kv-channels", int(a["--hidden-size"]) // h)) == d, (a.get("--kv-channels"), d)
assert int(a.get("--num-query-groups", h)) == groups, (a.get("--num-query-groups"), groups)
PY
}

family qwen3 qwen3 qwen3-0.6b 2 dp=2,tp=2,pp=1
family qwen3moe qwen3_moe qwen3-30b-a3b 2 dp=2,tp=2,pp=1
family gemma gemma gemma-2b 2 dp=2,tp=2,pp=1
family gemma2 gemma2 gemma-2-2b 2 dp=2,tp=2,pp=1
family gemma3 gemma3 gemma-3-1b 2 dp=2,tp=2,pp=1
family phi3 phi3 phi-3-mini 2 dp=2,tp=2,pp=1
family olmo2 olmo2 olmo-2-7b 2 dp=2,tp=2,pp=1
family starcoder2 starcoder2 starcoder2-3b 2 dp=2,tp=2,pp=1
family neox gpt_neox pythia-1.4b 2 dp=2,tp=2,pp=1
family falcon falcon falcon-7b 2 dp=4,tp=1,pp=1
family dsv2 deepseek deepseek-v2-lite 2 dp=2,tp=2,pp=1
family dsv3 deepseek deepseek-v3 4 dp=2,tp=2,pp=1
family scout llama4 llama-4-scout 2 dp=2,tp=2,pp=1
family maverick llama4 llama-4-maverick 4 dp=4,tp=2,pp=1 1x8

# a sweep of the model's Hugging Face config.json (tests/model/hf) writes
# the same file as the sweep of its preset: the heads, query groups, rotary
# base, partial rotary and context come from the config the sweep stored
hf_same() {
  name=$1 model=$2 preset=$3 cfg=$(dirname "$0")/../model/hf/$4 par=$5
  family "$name" "$model" "$preset" 2 "$par"
  "$approf" sweep --hf-config "$cfg" --num-layers 2 --manual-boundaries \
    --manual-layers --cluster 1x4 --micro-batches 4 --dtype bf16 --hardware a100-80g \
    --backend model --db "$dir/hf_$name.db" --quiet >/dev/null 2>"$dir/err" ||
    fail_with "$dir/err" "approf sweep --hf-config $cfg"
  "$apsolve" --db "$dir/hf_$name.db" --parallel "$par" --memory-budget 16T >"$dir/out" 2>"$dir/err" ||
    fail_with "$dir/err" "apsolve hf $name"
  id=$(sed -n 's/^Stored as plan \([0-9]*\)$/\1/p' "$dir/out" | head -1)
  "$apreport" --db "$dir/hf_$name.db" --plan "$id" --name "hf_$name" --out "$dir/f" --quiet \
    2>"$dir/err" || fail_with "$dir/err" "apreport hf $name"
  grep -v '^#' "$dir/f/${name}_megatron.args" >"$dir/preset.args"
  grep -v '^#' "$dir/f/hf_${name}_megatron.args" >"$dir/hf.args"
  diff "$dir/preset.args" "$dir/hf.args" >"$dir/diff" ||
    fail_with "$dir/diff" "$name: the --hf-config $4 file differs from preset $preset's"
  grep -q "^# model shape: .* the sweep's Hugging Face config$" "$dir/f/hf_${name}_megatron.args" ||
    fail_with "$dir/f/hf_${name}_megatron.args" "$name: the file does not say where its heads come from"
}
hf_same q8 qwen3 qwen3-8b qwen3-8b.json dp=2,tp=2,pp=1
has_hf() {
  grep -Fqx -- "$2" "$dir/f/hf_$1_megatron.args" || fail_with "$dir/f/hf_$1_megatron.args" "hf $1: no '$2'"
}
has_hf q8 '--num-attention-heads 32'
has_hf q8 '--num-query-groups 8'
has_hf q8 '--rotary-base 1000000'
hf_same p14 gpt_neox pythia-1.4b pythia-1.4b.json dp=2,tp=2,pp=1
has_hf p14 '--rotary-percent 0.25'
has_hf p14 '--num-attention-heads 16'
hf_same f7 falcon falcon-7b falcon-7b.json dp=4,tp=1,pp=1
has_hf f7 '--num-query-groups 1'
has_hf f7 '--num-attention-heads 71'

# what each file must say (exact lines; Megatron-LM's own recipes where
# it has one: examples/post_training/modelopt/conf/)
has() {
  grep -Fqx -- "$2" "$dir/f/$1_megatron.args" || fail_with "$dir/f/$1_megatron.args" "$1: no '$2'"
}
says() {
  grep -q -- "^# Megatron-LM core_v0.19.0 cannot express $2" "$dir/f/$1_megatron.args" ||
    fail_with "$dir/f/$1_megatron.args" "$1: does not say it cannot express '$2'"
}
hasnt() {
  if grep -Fqx -- "$2" "$dir/f/$1_megatron.args"; then
    fail_with "$dir/f/$1_megatron.args" "$1: has '$2'"
  fi
}
has qwen3 '--qk-layernorm'
has qwen3 '--kv-channels 128'
has qwen3 '--rotary-base 1000000'
hasnt qwen3 '--untie-embeddings-and-output-weights'   # Qwen3-0.6B ties its head
has qwen3moe '--num-experts 128'
has qwen3moe '--moe-ffn-hidden-size 768'
has qwen3moe '--moe-router-topk 8'
has qwen3moe '--untie-embeddings-and-output-weights'
has gemma '--apply-layernorm-1p'
has gemma '--num-query-groups 1'
hasnt gemma '--swiglu'
says gemma 'the GeGLU MLP'
says gemma 'the embedding scaled by sqrt'
says gemma2 'attention and final logit soft-capping'
says gemma2 'the norms after attention and after the MLP'
grep -q "^# not written: sliding-window attention" "$dir/f/gemma2_megatron.args" ||
  fail "gemma2: no note on sliding-window attention"
has gemma3 '--qk-layernorm'
has gemma3 '--kv-channels 256'      # 4 heads of 256 in a hidden size of 1152
says gemma3 'rope_local_base_freq'
has phi3 '--swiglu'
has phi3 '--untie-embeddings-and-output-weights'
says olmo2 'the post-norm layer'
says olmo2 'q_norm and k_norm over the whole q and k projections'
hasnt olmo2 '--qk-layernorm'
has starcoder2 '--normalization LayerNorm'
has starcoder2 '--rotary-base 999999'
says starcoder2 'rope_theta 999999.442'
says starcoder2 'gelu_pytorch_tanh'
hasnt starcoder2 '--disable-bias-linear'
has neox '--rotary-percent 0.25'
says neox 'the parallel residual'
has falcon '--num-query-groups 1'
has falcon '--disable-bias-linear'
says falcon 'the parallel attention and MLP'
has dsv2 '--multi-latent-attention'
has dsv2 '--kv-lora-rank 512'
has dsv2 '--qk-head-dim 128'
has dsv2 '--qk-pos-emb-head-dim 64'
has dsv2 '--v-head-dim 128'
has dsv2 '--moe-shared-expert-intermediate-size 2816'
has dsv2 "--moe-layer-freq '[0,1]'"
has dsv2 '--moe-router-pre-softmax'
has dsv3 '--q-lora-rank 1536'
has dsv3 "--moe-layer-freq '[0,0,0,1]'"
has dsv3 '--moe-router-score-function sigmoid'
has dsv3 '--moe-router-enable-expert-bias'
has dsv3 '--moe-router-num-groups 8'
has dsv3 '--moe-router-group-topk 4'
has dsv3 '--moe-router-topk-scaling-factor 2.5'
has scout '--qk-l2-norm'
has scout '--moe-apply-probs-on-input'
has scout '--moe-shared-expert-intermediate-size 8192'
has maverick "--moe-layer-freq '[0,1,0,1]'"
has maverick "--no-rope-freq '[0,0,0,1]'"
has maverick '--ffn-hidden-size 16384'
hasnt maverick '--qk-l2-norm'

# each file broken as the model's rule refuses it
neg() {
  f=$dir/f/$1_megatron.args
  sed "$3" "$f" >"$dir/neg.args"
  cmp -s "$f" "$dir/neg.args" && fail "negative case '$3' changed nothing in $f"
  rc=0
  "$python" "$check" "$meg" "$dir/neg.args" >"$dir/check.out" 2>&1 || rc=$?
  [ "$rc" = 1 ] || fail_with "$dir/check.out" "'$3' on $1: exit $rc, want 1"
  grep -q "rule $2:" "$dir/check.out" || fail_with "$dir/check.out" "'$3' on $1: no rule $2"
}
neg qwen3 model-qwen3 '/^--qk-layernorm$/d'
neg qwen3moe model-qwen3-moe '/^--num-experts /d'
neg gemma model-gemma '/^--apply-layernorm-1p$/d'
neg gemma2 model-gemma 's/^--apply-layernorm-1p$/--swiglu/'
neg gemma3 model-gemma3 '/^--qk-layernorm$/d'
neg phi3 model-phi3 '/^--swiglu$/d'
neg olmo2 model-olmo2 's/^--swiglu$/--qk-layernorm/'
neg starcoder2 model-layernorm-rope '/^--position-embedding-type /d'
neg starcoder2 model-biases 's/^--normalization LayerNorm$/--disable-bias-linear/'
neg neox model-layernorm-rope 's/^--normalization LayerNorm$/--normalization RMSNorm/'
neg falcon model-falcon '/^--disable-bias-linear$/d'
neg dsv2 model-deepseek '/^--multi-latent-attention$/d'
neg dsv3 moe-expert-bias '/^--moe-router-score-function /d'
neg dsv3 moe-groups 's/^--moe-router-num-groups 8$/--moe-router-num-groups 3/'
neg dsv3 moe-layer-pattern 's/^--moe-layer-freq .*/--moe-layer-freq "[0,1]"/'
neg maverick model-llama4 '/^--moe-apply-probs-on-input$/d'
neg maverick no-rope-pattern 's/^--no-rope-freq .*/--no-rope-freq "[0,1]"/'
neg scout moe-topk1 's/^--moe-router-score-function sigmoid$/--moe-router-score-function softmax/'
echo "launch families: 14 Megatron-LM files pass, 18 negative cases fail, 3 --hf-config files equal their presets'"
