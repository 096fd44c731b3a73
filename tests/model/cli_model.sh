#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 'approf models' and 'approf model show|export': exit codes, the exact
# parameter count, JSON keys, export -> --model-file gives the same output,
# a bad model file fails with exit 1 naming the op and field.
set -u
APPROF=$1
. "$(dirname "$0")/../lib.sh"
temp_dir T

"$APPROF" models > "$T/models" || fail "approf models"
for m in mlp resnet50 wide_resnet gpt bert swin llama mistral mixtral qwen2 deepseek_moe qwen3 qwen3_moe \
         gemma gemma2 gemma3 phi3 olmo2 starcoder2 gpt_neox falcon deepseek llama4; do
    grep -q "^$m " "$T/models" || fail "models lacks $m"
done
"$APPROF" model show resnet50 --layers 4 > "$T/show" || fail "model show"
grep -q '^parameters: 25557032$' "$T/show" || fail "resnet50 parameter count"
[ "$(grep -c '^[0-3] ' "$T/show")" -eq 4 ] || fail "4 layers expected"
grep -q '^total ' "$T/show" || fail "totals line"
"$APPROF" model show gpt --preset gpt2-small --format json > "$T/show.json" || fail "json"
grep -q '"parameters": 124439808' "$T/show.json" || fail "gpt2 parameters in json"
grep -q '"layers": \[' "$T/show.json" || fail "layers in json"
"$APPROF" model show mlp --manual-boundaries > "$T/mlp" || fail "mlp manual"
grep -q '(manual)' "$T/mlp" || fail "mlp with boundaries uses manual layers"
# Export, reload: identical output (same hash, same layers).
"$APPROF" model export swin --dataset cifar100 --batch 8 > "$T/swin.json" || fail "export"
"$APPROF" model show swin --dataset cifar100 --batch 8 --layers 6 > "$T/a" || fail "show zoo"
"$APPROF" model show --model-file "$T/swin.json" --layers 6 > "$T/b" || fail "show file"
same_file "$T/a" "$T/b" "export/load differs"
# Bad model file: exit 1 with the op and field named.
sed 's/"op": "softmax"/"op": "softmux"/' "$T/swin.json" > "$T/bad.json"
"$APPROF" model show --model-file "$T/bad.json" 2> "$T/err" >/dev/null
[ $? -eq 1 ] || fail "bad file must exit 1"
grep -q "bad.json: op '.*softmax': field op: unknown operator 'softmux'" "$T/err" || fail "error message: $(cat "$T/err")"
# Usage errors exit 2.
"$APPROF" model show nosuch 2>/dev/null; [ $? -eq 2 ] || fail "unknown model exits 2"
"$APPROF" model show gpt --layers x 2>/dev/null; [ $? -eq 2 ] || fail "bad --layers exits 2"
"$APPROF" model frob 2>/dev/null; [ $? -eq 2 ] || fail "unknown subcommand exits 2"
"$APPROF" model --help > /dev/null || fail "--help exits 0"
# Hugging Face configs: the preset's graph (same hash line), bad files exit 1
# naming file and field. DATA is the directory of this script's data/.
DATA=$(dirname "$0")/data
"$APPROF" model show --hf-config "$DATA/llama-3-8b.json" --num-layers 2 --batch 1 > "$T/hf" || fail "show --hf-config"
"$APPROF" model show llama --preset llama-3-8b --num-layers 2 --batch 1 > "$T/preset" || fail "show llama"
[ "$(sed -n 2p "$T/hf")" = "$(sed -n 2p "$T/preset")" ] || fail "hf config and preset hashes differ"
"$APPROF" model show --hf-config "$DATA/mixtral-8x7b.json" | grep -q '^parameters: 46702792704$' || fail "mixtral count"
"$APPROF" model show --hf-config "$DATA/bad-type.json" 2> "$T/err" >/dev/null
[ $? -eq 1 ] || fail "ill-typed config must exit 1"
grep -q "bad-type.json: field num_key_value_heads" "$T/err" || fail "config error message: $(cat "$T/err")"
"$APPROF" model show --hf-config "$DATA/bad-model-type.json" 2> "$T/err" >/dev/null
[ $? -eq 1 ] || fail "unknown model_type must exit 1"
grep -q "bad-model-type.json: field model_type" "$T/err" || fail "model_type message: $(cat "$T/err")"
"$APPROF" model show llama --hf-config "$DATA/gpt2.json" 2>/dev/null; [ $? -eq 2 ] || fail "name + --hf-config exits 2"
# A choice option a model does not take, or two model sources: exit 2.
"$APPROF" model show resnet50 --preset gpt3-39b 2> "$T/err" >/dev/null; [ $? -eq 2 ] || fail "preset on resnet50 exits 2"
grep -q "gpt3-39b" "$T/err" || fail "preset conflict message"
"$APPROF" sweep --model resnet50 --preset gpt3-39b --db "$T/x.db" 2>/dev/null; [ $? -eq 2 ] || fail "sweep preset on resnet50 exits 2"
"$APPROF" sweep --model nosuch --db "$T/x.db" 2>/dev/null; [ $? -eq 2 ] || fail "sweep unknown model exits 2"
"$APPROF" sweep --model gpt --hf-config "$DATA/gpt2.json" --db "$T/x.db" 2>/dev/null; [ $? -eq 2 ] || fail "sweep two sources exits 2"
"$APPROF" sweep --hf-config "$DATA/bad-missing.json" --db "$T/x.db" 2> "$T/err"; [ $? -eq 1 ] || fail "sweep bad config exits 1"
grep -q "bad-missing.json: field intermediate_size" "$T/err" || fail "sweep config message"
[ ! -e "$T/x.db" ] || fail "a refused sweep must not create the database"
# Sizes: the limit is said; layers have a documented maximum (1024); a
# Hugging Face config whose sizes overflow or cannot be built exits 1 naming
# the file and the field, never a different model or an internal operator.
"$APPROF" model show gpt --hidden 1e9 2> "$T/err" >/dev/null; expect_rc 2 $? "$T/err" "--hidden 1e9"
says_text "$T/err" "--hidden needs an integer in 1..16777216, got '1e9'" "--hidden 1e9"
"$APPROF" model show gpt --num-layers 2000 2> "$T/err" >/dev/null; expect_rc 2 $? "$T/err" "--num-layers 2000"
says_text "$T/err" "--num-layers needs an integer in 1..1024" "--num-layers 2000"
"$APPROF" sweep --model gpt --num-layers 2000 --db "$T/x.db" 2> "$T/err" >/dev/null; expect_rc 2 $? "$T/err" "sweep --num-layers 2000"
"$APPROF" model show llama --hidden 48 --heads 16 --num-layers 1 2> "$T/err" >/dev/null; expect_rc 2 $? "$T/err" "odd head_dim"
says_text "$T/err" "head_dim of 3" "odd head_dim"
sed 's/"n_shared_experts": 2/"n_shared_experts": 257/; s/"moe_intermediate_size": 1408/"moe_intermediate_size": 16777216/' \
    "$DATA/deepseek-moe-16b.json" > "$T/ds.json"
"$APPROF" model show --hf-config "$T/ds.json" 2> "$T/err" >/dev/null; expect_rc 1 $? "$T/err" "257 shared experts"
says_text "$T/err" "ds.json: field n_shared_experts" "257 shared experts"
sed 's/"num_attention_heads": 32,/"num_attention_heads": 32, "head_dim": 3,/' "$DATA/llama-3-8b.json" > "$T/hd.json"
"$APPROF" model show --hf-config "$T/hd.json" 2> "$T/err" >/dev/null; expect_rc 1 $? "$T/err" "head_dim 3"
says_text "$T/err" "hd.json: field head_dim: 3 is odd" "head_dim 3"
sed 's/"num_hidden_layers": 32/"num_hidden_layers": 100000/' "$DATA/llama-3-8b.json" > "$T/nl.json"
"$APPROF" model show --hf-config "$T/nl.json" 2> "$T/err" >/dev/null; expect_rc 1 $? "$T/err" "100000 layers"
says_text "$T/err" "nl.json: field num_hidden_layers: expected an integer in 1..1024" "100000 layers"
# Tuples are counted before a sweep starts: above 100000 a notice, above
# 2000000 a refusal (exit 1, nothing created) unless --allow-large. The
# database is a directory, so each run stops at opening it, after the count.
mkdir -p "$T/dir.db"
"$APPROF" sweep --model gpt --num-layers 200 --manual-layers --cluster 1x8 --micro-batches 16 --backend model --variants alpa \
    --db "$T/dir.db" 2> "$T/err" >/dev/null; expect_rc 1 $? "$T/err" "large sweep"
says_text "$T/err" "a large sweep: 160803 tuples (200 layers on 4 submeshes), more than 100000" "large sweep"
"$APPROF" sweep --model gpt --num-layers 1000 --manual-layers --cluster 1x8 --micro-batches 16 --backend model --variants alpa \
    --db "$T/huge.db" 2> "$T/err" >/dev/null; expect_rc 1 $? "$T/err" "huge sweep"
says_text "$T/err" "gpt: 4004003 tuples to profile (1000 layers on 4 submeshes of a 1x8 cluster), above the limit of 2000000" "huge sweep"
[ ! -e "$T/huge.db" ] || fail "a refused sweep must not create the database"
"$APPROF" sweep --model gpt --num-layers 1000 --manual-layers --cluster 1x8 --micro-batches 16 --backend model --variants alpa --allow-large \
    --db "$T/dir.db" 2> "$T/err" >/dev/null; expect_rc 1 $? "$T/err" "huge sweep allowed"
says_text "$T/err" "4004003 tuples (1000 layers on 4 submeshes), more than 100000" "huge sweep allowed"
says_text "$T/err" "(--allow-large given)" "huge sweep allowed"
says_text "$T/err" "dir.db: is a directory" "huge sweep allowed"
# Every option 'approf models' advertises is one sweep and model show take.
for opt in $(grep -o -- '--[a-z][a-z-]*' "$T/models" | sort -u); do
    "$APPROF" sweep --help | grep -q -- "$opt" || fail "approf models advertises $opt, which sweep lacks"
    "$APPROF" model --help | grep -q -- "$opt" || fail "approf models advertises $opt, which model lacks"
done
# 'approf help COMMAND' is the command's --help
"$APPROF" help sweep | head -1 | grep -q "^Usage: approf sweep" || fail "approf help sweep"
"$APPROF" help nosuch 2>/dev/null; [ $? -eq 2 ] || fail "approf help nosuch exits 2"
# a preset's name given as a model's: the model it belongs to is named
"$APPROF" model show llama-3-8b 2>"$T/err"; [ $? -eq 2 ] || fail "preset as model exits 2"
grep -q -- "it is a preset of llama (--model llama --preset llama-3-8b" "$T/err" ||
    fail "preset as model: the family is not named"
# the default layer count on a model of fewer operators: the most it splits into
"$APPROF" sweep --model mlp --backend model --micro-batches 1 --db "$T/mlp.db" --quiet \
    2>"$T/err" || fail "sweep --model mlp with the default layers"
grep -q "do not split into the default 16 layers" "$T/err" || fail "default layers: no notice"
"$APPROF" sweep --model mlp --backend model --micro-batches 1 --layers 16 --db "$T/mlp2.db" \
    --quiet 2>/dev/null; [ $? -eq 1 ] || fail "--layers 16 asked for on mlp must still fail"
echo ok
