#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Real decoder exports with symbolic dimensions (shared/onnx-real, the
# SOURCES.md of each directory), each checked when it is there:
# ort-gpt2/tiny-random-gpt2-past.onnx: hf-internal-testing/tiny-random-gpt2
#   exported with past key/values by onnxruntime's transformer tools
#   (torch.onnx, then the com.microsoft fusions), from
#   microsoft/onnxruntime-genai test/models/hf-internal-testing/
#   tiny-random-gpt2-fp32/past.onnx (a0c04eb1, blob c47a9327):
#   - the file is the one SOURCES.md names (SHA-256);
#   - unbound it is refused naming the input, dim and name; a past bound to
#     more than 0 (a KV cache: inference) is refused naming the Attention
#     node and the dim to bind; a mask longer than the sequence too;
#   - bound (--seq-len 8, --dim past_seq_len=0, --dim total_seq_len=8) its
#     parameters equal python3-onnx's sum over the initializers
#     (onnx_counts.py --params) and the hand count from the model's config
#     (5 layers, n_embd 32, 4 heads, vocabulary 1000, 512 positions, as the
#     file stores them: an untied copy of the head, shared equal tensors);
#   - its forward FLOPs hold the hand count of its GEMMs (2 per
#     multiply-add of every weight matrix, causal attention as approf's
#     flash attention prices it) plus under 5 % of elementwise work, and its
#     forward and backward FLOPs equal the zoo's GPT-2 at the same sizes
#     (--attention flash) less the zoo's loss, which the export does not
#     have;
#   - approf sweep runs on it with the same bindings.
# torch-gpt2-megatron/gpt2_megatron.onnx: a one-layer Megatron-LM GPT-2 as
#   torch.onnx 1.9 wrote it with a past (opset 12, no fusions), from
#   onnxruntime's test data (onnxruntime/onnxruntime-qnn cee6c0d9, blob
#   a0a66d1c): SHA-256; refused unbound; bound (--seq-len 8, --dim
#   past_seq_len=0) its parameters equal python3-onnx's and the hand count
#   (hidden 8, 2 heads, MLP 32, vocabulary 10, 64 positions, untied head),
#   its forward FLOPs hold the hand GEMM count (eager attention over every
#   key), and forward and backward equal the zoo's GPT-2 (--attention
#   eager) less its loss plus the export's masking (scores * m and the
#   subtraction of 10000 (1 - m): one FLOP an element each forward, a
#   multiply's 2 and an add's 1 backward, opsem.c); a sweep runs.
# ort-genai-gqa/decoder.onnx: a two-layer decoder with com.microsoft
#   GroupQueryAttention (4 query, 2 key/value heads) that onnxruntime-genai's
#   test/python/create/create_gqa_model.py writes (a0c04eb1, blob eb62e089):
#   SHA-256; refused unbound and with a past of 3 (naming the GQA node);
#   bound (--seq-len 8, past 0) its parameters equal python3-onnx's and the
#   hand count (hidden 64, MLP 128, vocabulary 1000, LayerNorms with bias,
#   untied head), its forward FLOPs hold the hand GEMM count (causal
#   attention as flash prices it, the key/value projections of 2 heads) plus
#   under 5 % of elementwise work; a sweep runs.
# Skipped (77) without the ONNX reader or without any of the files.
# Usage: cli_onnx_real_decoder.sh APPROF yes|no CORPUS_DIR ONNX_COUNTS_PY
set -u
APPROF=$1 HAVE_ONNX=$2 DIR=$3 COUNTS=$4
. "$(dirname "$0")/../lib.sh"
F=$DIR/ort-gpt2/tiny-random-gpt2-past.onnx
if [ "$HAVE_ONNX" != yes ]; then
    echo "skip: this build has no ONNX reader"
    exit 77
fi
M=$DIR/torch-gpt2-megatron/gpt2_megatron.onnx
G=$DIR/ort-genai-gqa/decoder.onnx
if [ ! -f "$F" ] && [ ! -f "$M" ] && [ ! -f "$G" ]; then
    echo "skip: the real decoder exports are not in the tree ($F, $M, $G)"
    exit 77
fi
temp_dir T
PY=
for p in /usr/bin/python3 python3; do
    if "$p" -c 'import onnx' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || fail "python3-onnx is needed to count the file independently (tools/install-deps.sh installs it)"
ort_gpt2() {
sum=$(sha256sum "$F" | cut -d' ' -f1)
[ "$sum" = f618eca0cd9025bb2b834ffa21ba3755f1313e857ddd42601d8ab922016e791d ] ||
    fail "$F is not the file of SOURCES.md (SHA-256 $sum)"

S=8 L=5 H=32 HEADS=4 V=1000 P=512 FF=128
BIND=(--seq-len $S --dim past_seq_len=0 --dim total_seq_len=$S)

"$APPROF" model show --model-file "$F" > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "unbound"
says_text "$T/err" "input 'input_ids': field type.tensor_type.shape.dim[1]: symbolic dimension 'seq_len' is not bound" "unbound"
"$APPROF" model show --model-file "$F" --seq-len $S --dim past_seq_len=2 --dim total_seq_len=10 > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "past 2"
says_text "$T/err" "node 'GptAttention_0' (Attention): field input[4]: a past key/value cache ('past_0') is inference, not a training step: bind its length to 0 (--dim past_seq_len=0)" "past 2"
"$APPROF" model show --model-file "$F" --seq-len $S --dim past_seq_len=0 --dim total_seq_len=9 > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "mask 9"
says_text "$T/err" "node 'GptAttention_0' (Attention): field input[3]: the mask 'attention_mask' has 9 key positions" "mask 9"
"$APPROF" sweep --model-file "$F" --seq-len $S --dim past_seq_len=0 --layers 2 --cluster 1x2 --batch 4 \
    --micro-batches 2 --backend model --quiet --db "$T/bad.db" > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "sweep, total_seq_len unbound"
says_text "$T/err" "symbolic dimension 'total_seq_len' is not bound" "sweep, total_seq_len unbound"
[ ! -e "$T/bad.db" ] || fail "a refused sweep wrote its database"

"$APPROF" model show --model-file "$F" "${BIND[@]}" --format json > "$T/m.json" 2> "$T/err" ||
    fail_with "$T/err" "model show, bound"
read -r a fwd bwd < <("$PY" -c 'import json, sys; d = json.load(sys.stdin); t = d["totals"]
print(d["parameters"], t["fwd_flops"], t["bwd_flops"])' < "$T/m.json") || fail "model show --format json"

# parameters: python3-onnx's walk of the initializers
p=$("$PY" "$COUNTS" --params "$F" | cut -d' ' -f2) || fail "onnx_counts.py --params"
[ "$a" = "$p" ] || fail "approf counts $a parameters, python3-onnx $p"
# and by hand: wte, wpe; per layer c_attn, attn.c_proj, mlp.c_fc,
# mlp.c_proj weights; the optimizer keeps one tensor of each equal value
# (tiny-random-gpt2's biases are zeros, its norm weights ones): a c_attn
# bias [3H], a c_fc bias [F], one [H] of zeros (every norm bias and
# projection bias), one [H] of ones (every norm weight); the head a
# transposed copy of wte
hand=$((V * H + P * H + L * (3 * H * H + H * H + 2 * H * FF) + 3 * H + FF + 2 * H + H * V))
[ "$a" = "$hand" ] || fail "approf counts $a parameters, the config's hand count $hand"
echo "ok: parameters $a (python3-onnx $p, by hand $hand)"

# forward GEMMs of one sample: 2 per multiply-add of the weight matrices and
# the head, and per layer the two attention GEMMs over heads x S queries of
# (S + 1) / 2 keys on average (causal, as the IR's flash attention prices it)
gemm=$((2 * S * (L * (3 * H * H + H * H + 2 * H * FF) + H * V) + L * 2 * 2 * S * ((S + 1) / 2) * H))
[ "$fwd" -ge "$gemm" ] && [ $((20 * (fwd - gemm))) -lt "$fwd" ] ||
    fail "forward FLOPs $fwd: the GEMMs' hand count is $gemm (elementwise work must be under 5 %)"
echo "ok: forward FLOPs $fwd, of which GEMMs $gemm by hand"

# the zoo's GPT-2 at the same sizes, less its loss (cross entropy over
# S x V logits: 5 FLOPs an element forward, 3 backward, opsem.c)
"$APPROF" model show gpt --num-layers $L --hidden $H --heads $HEADS --vocab $V --seq-len $S --batch 1 \
    --attention flash --format json > "$T/z.json" 2> "$T/err" || fail_with "$T/err" "model show gpt"
read -r zf zb < <("$PY" -c 'import json, sys; t = json.load(sys.stdin)["totals"]
print(t["fwd_flops"], t["bwd_flops"])' < "$T/z.json") || fail "model show gpt --format json"
[ "$fwd" = $((zf - 5 * S * V)) ] && [ "$bwd" = $((zb - 3 * S * V)) ] ||
    fail "FLOPs $fwd / $bwd, the zoo's GPT-2 less its loss $((zf - 5 * S * V)) / $((zb - 3 * S * V))"
echo "ok: forward and backward FLOPs = the zoo's GPT-2 less its loss: $fwd / $bwd"

"$APPROF" sweep --model-file "$F" "${BIND[@]}" --layers 2 --cluster 1x2 --batch 4 --micro-batches 2 \
    --backend model --quiet --db "$T/s.db" > /dev/null 2> "$T/sweep.err" || fail_with "$T/sweep.err" "sweep"
not_crashed "$T/sweep.err" "sweep"
says_text "$T/sweep.err" "sweep 1 done: 9 tuples, 18 entries written" "sweep"
echo "ok: a sweep runs on it"
}


megatron() {
sum=$(sha256sum "$M" | cut -d' ' -f1)
[ "$sum" = c854eb557a5a4a246d148cb8b69ac0f340c2f0b5c98bc4664e4b9539a3cfc6f7 ] ||
    fail "$M is not the file of SOURCES.md (SHA-256 $sum)"
S=8 L=1 H=8 HEADS=2 V=10 P=64 FF=32
"$APPROF" model show --model-file "$M" --seq-len $S > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "megatron unbound"
says_text "$T/err" "input 'past_0': field type.tensor_type.shape.dim[3]: symbolic dimension 'past_seq_len' is not bound" "megatron unbound"
"$APPROF" model show --model-file "$M" --seq-len $S --dim past_seq_len=0 --format json > "$T/g.json" 2> "$T/err" ||
    fail_with "$T/err" "megatron: model show, bound"
read -r a fwd bwd < <("$PY" -c 'import json, sys; d = json.load(sys.stdin); t = d["totals"]
print(d["parameters"], t["fwd_flops"], t["bwd_flops"])' < "$T/g.json") || fail "model show --format json"
p=$("$PY" "$COUNTS" --params "$M" | cut -d' ' -f2) || fail "onnx_counts.py --params"
[ "$a" = "$p" ] || fail "megatron: approf counts $a parameters, python3-onnx $p"
# embeddings; per layer two norms (scale, bias), query_key_value, dense,
# dense_h_to_4h, dense_4h_to_h with biases; the final norm; the head
hand=$((V * H + P * H + L * (4 * H + 3 * H * H + 3 * H + H * H + H + 2 * H * FF + FF + H) + 2 * H + H * V))
[ "$a" = "$hand" ] || fail "megatron: approf counts $a parameters, the hand count $hand"
echo "ok: megatron: parameters $a (python3-onnx $p, by hand $hand)"
gemm=$((2 * S * (L * (3 * H * H + H * H + 2 * H * FF) + H * V) + L * 2 * 2 * S * S * H))
[ "$fwd" -ge "$gemm" ] || fail "megatron: forward FLOPs $fwd below the GEMMs' hand count $gemm"
"$APPROF" model show gpt --num-layers $L --hidden $H --heads $HEADS --vocab $V --seq-len $S --batch 1 \
    --attention eager --format json > "$T/z.json" 2> "$T/err" || fail_with "$T/err" "model show gpt"
read -r zf zb < <("$PY" -c 'import json, sys; t = json.load(sys.stdin)["totals"]
print(t["fwd_flops"], t["bwd_flops"])' < "$T/z.json") || fail "model show gpt --format json"
mask=$((HEADS * S * S))
[ "$fwd" = $((zf - 5 * S * V + 2 * mask)) ] && [ "$bwd" = $((zb - 3 * S * V + 3 * mask)) ] ||
    fail "megatron: FLOPs $fwd / $bwd, the zoo's GPT-2 less its loss plus the masking $((zf - 5 * S * V + 2 * mask)) / $((zb - 3 * S * V + 3 * mask))"
echo "ok: megatron: FLOPs $fwd / $bwd (GEMMs $gemm by hand) = the zoo's GPT-2 (eager) less its loss plus the masking"
"$APPROF" sweep --model-file "$M" --seq-len $S --dim past_seq_len=0 --layers 2 --cluster 1x2 --batch 4 \
    --micro-batches 2 --backend model --quiet --db "$T/m.db" > /dev/null 2> "$T/sweep.err" ||
    fail_with "$T/sweep.err" "megatron: sweep"
not_crashed "$T/sweep.err" "megatron: sweep"
echo "ok: megatron: a sweep runs on it"
}
gqa() {
sum=$(sha256sum "$G" | cut -d' ' -f1)
[ "$sum" = 056e04d0501a306d37f85dc1e9467240932db0b9e6046ed5221990da68e36b98 ] ||
    fail "$G is not the file of SOURCES.md (SHA-256 $sum)"
S=8 L=2 H=64 KVD=32 V=1000 FF=128
"$APPROF" model show --model-file "$G" --seq-len $S --dim past_seq_len=0 > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "gqa unbound"
says_text "$T/err" "symbolic dimension 'total_seq_len' is not bound" "gqa unbound"
"$APPROF" model show --model-file "$G" --seq-len $S --dim past_seq_len=3 --dim total_seq_len=11 > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "gqa past 3"
says_text "$T/err" "node 'GQA_0' (GroupQueryAttention): field input[3]: a past key/value cache ('past_key_values.0.key') is inference, not a training step: bind its length to 0 (--dim past_seq_len=0)" "gqa past 3"
"$APPROF" model show --model-file "$G" --seq-len $S --dim past_seq_len=0 --dim total_seq_len=$S --format json \
    > "$T/q.json" 2> "$T/err" || fail_with "$T/err" "gqa: model show, bound"
read -r a fwd bwd < <("$PY" -c 'import json, sys; d = json.load(sys.stdin); t = d["totals"]
print(d["parameters"], t["fwd_flops"], t["bwd_flops"])' < "$T/q.json") || fail "model show --format json"
p=$("$PY" "$COUNTS" --params "$G" | cut -d' ' -f2) || fail "onnx_counts.py --params"
[ "$a" = "$p" ] || fail "gqa: approf counts $a parameters, python3-onnx $p"
# embedding; per layer two LayerNorms (scale, bias), q, k and v (2 heads of
# 16), o, up, down; the final norm; the untied head
hand=$((V * H + L * (4 * H + H * H + 2 * H * KVD + H * H + 2 * H * FF) + 2 * H + H * V))
[ "$a" = "$hand" ] || fail "gqa: approf counts $a parameters, the hand count $hand"
echo "ok: gqa: parameters $a (python3-onnx $p, by hand $hand)"
gemm=$((2 * S * (L * (H * H + 2 * H * KVD + H * H + 2 * H * FF) + H * V) + L * 2 * 2 * S * ((S + 1) / 2) * H))
[ "$fwd" -ge "$gemm" ] && [ $((20 * (fwd - gemm))) -lt "$fwd" ] ||
    fail "gqa: forward FLOPs $fwd: the GEMMs' hand count is $gemm (elementwise work must be under 5 %)"
echo "ok: gqa: forward FLOPs $fwd, of which GEMMs $gemm by hand"
"$APPROF" sweep --model-file "$G" --seq-len $S --dim past_seq_len=0 --dim total_seq_len=$S --layers 2 \
    --cluster 1x2 --batch 4 --micro-batches 2 --backend model --quiet --db "$T/q.db" > /dev/null \
    2> "$T/sweep.err" || fail_with "$T/sweep.err" "gqa: sweep"
not_crashed "$T/sweep.err" "gqa: sweep"
echo "ok: gqa: a sweep runs on it"
}

n=0
if [ -f "$F" ]; then ort_gpt2; n=$((n + 1)); else echo "skip: $F is not in the tree"; fi
if [ -f "$G" ]; then gqa; n=$((n + 1)); else echo "skip: $G is not in the tree"; fi
if [ -f "$M" ]; then megatron; n=$((n + 1)); else echo "skip: $M is not in the tree"; fi
echo "ok: $n real decoder exports"
