#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ONNX graphs as exporters write them (onnx_exporters.py, onnx_models.py
# gpt2-dynamic, written with Debian's python3-onnx at test time):
# - every new operator and pattern at opset 11 and 13 (Squeeze / Unsqueeze
#   axes and Dropout ratio as attributes, then as inputs) and a model-zoo
#   style CNN (auto_pad, LRN, asymmetric pads, Sum, Gemm, Dropout with its
#   mask output) load with the parameter count the generator computes and
#   the forward and backward FLOPs of the same network written op by op in
#   approf's model format (with ONNX's output sizes computed by the script);
# - a decoder block written with decomposed LayerNorm and Erf GELU, as
#   torch.onnx writes them before opset 17 (dec13, dec17: ReduceMean axes
#   as attribute; dec18: as input), equals its IR and the same block with
#   LayerNormalization and Gelu (ref17); so does it with GELU's tanh form
#   (tanh13: x^3 a Pow, tanh17: x * (x * x));
# - a decoder with a symbolic batch and sequence length is refused naming
#   the input, dim and name until --seq-len (or --dim) binds it, then equals
#   the zoo's GPT block at two sequence lengths, and a sweep runs on it; so
#   does one whose head reshapes compute their shape from the tensor as
#   torch.onnx writes it (Shape, Gather, Div, Unsqueeze, Concat);
# - the decoder block in the layout onnxruntime's transformer optimizer
#   gives a torch.onnx export with past (gpt2-ort: com.microsoft
#   EmbedLayerNormalization, Attention with attention_mask and past_0,
#   SkipLayerNormalization, FastGelu; symbolic batch_size, seq_len,
#   past_seq_len, total_seq_len) is refused unbound, with a past longer
#   than 0 and with a mask longer than the sequence, then equals the zoo's
#   GPT block with flash attention at two sequence lengths; so does it with
#   input_ids.view(batch, total - past) computed from Shape of the mask and
#   of the empty past (gpt2-ort-view); a sweep runs on it; an unknown
#   com.microsoft operator (BiasGelu) is refused naming node and operator;
# - a Megatron-LM GPT-2 layer as torch.onnx writes it with a past
#   (gpt2-megatron: LayerNorm with x - mean twice and a Cast, Megatron's
#   tanh GELU, the past split, squeezed and concatenated, the mask sliced
#   at computed bounds and applied by Mul and Sub) is refused unbound and,
#   its past bound to 0, has the hand count of parameters and the zoo's
#   GPT block's FLOPs (eager) less its loss plus the masking, at two
#   sequence lengths; with a past of 3 it loads; a sweep runs; an empty
#   input that a Relu reads, and an empty first input, are refused;
# - Hugging Face's GPT-2 block as torch.onnx writes GPT2LMHeadModel
#   (gpt2-hf: Range positions, Conv1D as Reshape / Gemm / Reshape, the
#   causal mask sliced from the uint8 buffer and applied with Where) has
#   the zoo's parameters (neither the uint8 buffer nor the one-element
#   masked_bias is a parameter; python3-onnx's count agrees) and the zoo's
#   eager FLOPs plus the Where (one operation an element each way over
#   heads x S x S), at two sequence lengths; a sweep runs;
# - transformers 4.36+'s causal mask built as torch.onnx writes it
#   (gpt2-mask: ConstantOfShape, Trilu, Greater, Expand with its size math,
#   Equal, And, Where, Add) is the zoo's eager block plus the mask's
#   kernels, at two sequence lengths; a sweep runs;
# - one Llama layer in onnxruntime-genai's layout (llama-ort:
#   SimplifiedLayerNormalization, RotaryEmbedding, GroupQueryAttention,
#   SkipSimplifiedLayerNormalization; llama-ort-mha: MultiHeadAttention;
#   llama-ort-rms: the RMSNorms decomposed as torch.onnx writes them) is
#   the zoo's llama of the same config.json (flash) plus the ReduceSum of
#   attention_mask, at two sequence lengths; a past of 3 and a sliding
#   window are refused naming node and field; a sweep runs;
# - one Llama layer as torch.onnx writes transformers' eager Llama
#   (llama-torch, llama-torch-mha: the rotary written out from the buffer
#   inv_freq, repeat_kv, the causal mask) is the zoo's llama (eager) plus
#   the tables, the written rotary and the mask's kernels, with inv_freq
#   no parameter, at two sequence lengths; a sweep runs;
# - an Expand of a tensor that needs a gradient along two axes, the Sin of
#   a projection of float data, a ReduceSum over a leading
#   axis and a MultiHeadAttention with its q/k/v bias exit 1 naming the node;
# - a dropout mask that a node reads, pads no symmetric padding matches, a
#   Squeeze of a dim that is not 1, and a decomposed LayerNorm or GELU
#   whose intermediate a node outside reads exit 1 naming the node and
#   operator.
# Usage: cli_onnx_exporters.sh APPROF yes|no DIR_OF_GENERATORS
set -u
APPROF=$1 HAVE_ONNX=$2 GEN=$3
. "$(dirname "$0")/../lib.sh"
if [ "$HAVE_ONNX" != yes ]; then
    echo "skip: this build has no ONNX reader"
    exit 77
fi
temp_dir T
PY=
for p in /usr/bin/python3 python3; do
    if "$p" -c 'import onnx' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || fail "python3-onnx is needed to write the test models (tools/install-deps.sh installs it)"
"$PY" "$GEN/onnx_exporters.py" "$T" || fail "onnx_exporters.py"
"$PY" "$GEN/onnx_models.py" gpt2-dynamic "$T/decoder.onnx" || fail "writing decoder.onnx"
"$PY" "$GEN/onnx_models.py" gpt2-torch "$T/torch.onnx" || fail "writing torch.onnx"
for m in gpt2-ort gpt2-ort-bad gpt2-ort-view gpt2-megatron empty-read gpt2-hf gpt2-mask llama-ort llama-ort-mha \
    llama-ort-window llama-ort-past llama-ort-rms llama-torch llama-torch-mha expand-grad sin-grad reduce-axis mha-bias; do
    "$PY" "$GEN/onnx_models.py" $m "$T/$m.onnx" || fail "writing $m.onnx"
done

# parameters, fwd_flops, bwd_flops, batch of approf model show --format json
totals() {
    "$PY" -c 'import json, sys; d = json.load(sys.stdin); t = d["totals"]
print(d["parameters"], t["fwd_flops"], t["bwd_flops"], d["batch_size"])'
}
for m in ops11 ops13 cnn dec13 dec17 dec18 tanh13 tanh17 ref17; do
    "$APPROF" model show --model-file "$T/$m.onnx" --format json > "$T/$m.onnx.out" 2> "$T/err" ||
        fail "$m.onnx: $(cat "$T/err")"
    "$APPROF" model show --model-file "$T/$m.json" --format json > "$T/$m.json.out" 2> "$T/err" ||
        fail "$m.json: $(cat "$T/err")"
    a=$(totals < "$T/$m.onnx.out") b=$(totals < "$T/$m.json.out")
    [ "$a" = "$b" ] || fail "$m: ONNX '$a' vs written op by op '$b' (parameters fwd bwd batch)"
    p=$(cat "$T/$m.params")
    [ "${a%% *}" = "$p" ] || fail "$m: $a parameters, the initializers read as weights hold $p"
    echo "ok: $m.onnx = its IR: $a"
done

# decomposed LayerNorm and GELU as Erf = LayerNormalization and Gelu
r=$(totals < "$T/ref17.onnx.out")
for m in dec13 dec17 dec18 tanh13 tanh17; do
    a=$(totals < "$T/$m.onnx.out")
    [ "$a" = "$r" ] || fail "$m (decomposed) '$a' vs ref17 (LayerNormalization, Gelu) '$r'"
    echo "ok: $m.onnx (decomposed LayerNorm, Erf or tanh GELU) = ref17.onnx: $a"
done

# the decoder: symbolic batch and sequence_length
"$APPROF" model show --model-file "$T/decoder.onnx" > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "unbound sequence_length"
says_text "$T/err" "decoder.onnx: input 'input_ids': field type.tensor_type.shape.dim[1]: symbolic dimension 'sequence_length' is not bound (give --seq-len N or --dim sequence_length=N" "unbound sequence_length"
for s in 16 32; do
    "$APPROF" model show --model-file "$T/decoder.onnx" --batch 2 --seq-len $s --format json > "$T/d.json" ||
        fail "decoder.onnx --seq-len $s"
    "$APPROF" model show gpt --num-layers 1 --hidden 64 --heads 4 --seq-len $s --vocab 100 --batch 2 \
        --format json > "$T/dz.json" || fail "gpt --seq-len $s"
    a=$(totals < "$T/d.json") b=$(totals < "$T/dz.json")
    [ "$a" = "$b" ] || fail "decoder at seq $s: ONNX '$a' vs zoo '$b'"
    echo "ok: decoder.onnx --seq-len $s = zoo: $a"
    # the head reshapes' shapes computed from the tensors (Shape, Gather,
    # Div, Unsqueeze, Concat): folded once the dims are bound
    "$APPROF" model show --model-file "$T/torch.onnx" --batch 2 --seq-len $s --format json > "$T/t.json" ||
        fail "torch.onnx --seq-len $s"
    a=$(totals < "$T/t.json")
    [ "$a" = "$b" ] || fail "torch-style shapes at seq $s: ONNX '$a' vs zoo '$b'"
done
"$APPROF" model show --model-file "$T/decoder.onnx" --batch 2 --dim sequence_length=32 --format json > "$T/d.json" ||
    fail "decoder.onnx --dim sequence_length=32"
a=$(totals < "$T/d.json")
[ "$a" = "$b" ] || fail "decoder --dim sequence_length=32: '$a' vs zoo '$b'"
"$APPROF" sweep --model-file "$T/decoder.onnx" --seq-len 16 --layers 2 --cluster 1x2 --batch 4 --micro-batches 2 \
    --backend model --quiet --db "$T/s.db" 2> "$T/sweep.err" || fail "sweep: $(cat "$T/sweep.err")"
"$APPROF" sweep --model-file "$T/decoder.onnx" --layers 2 --cluster 1x2 --batch 4 --micro-batches 2 \
    --backend model --quiet --db "$T/s2.db" > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "sweep, unbound sequence_length"
says_text "$T/err" "symbolic dimension 'sequence_length' is not bound" "sweep, unbound sequence_length"

# onnxruntime's fused GPT-2 layout: bound, it is the zoo's block (flash)
O=$T/gpt2-ort.onnx
"$APPROF" model show --model-file "$O" --seq-len 16 > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "gpt2-ort unbound"
says_text "$T/err" "input 'attention_mask': field type.tensor_type.shape.dim[1]: symbolic dimension 'total_seq_len' is not bound" "gpt2-ort unbound"
"$APPROF" model show --model-file "$O" --seq-len 16 --dim past_seq_len=1 --dim total_seq_len=17 > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "gpt2-ort past 1"
says_text "$T/err" "gpt2-ort.onnx: node 'GptAttention_0' (Attention): field input[4]: a past key/value cache ('past_0') is inference, not a training step: bind its length to 0 (--dim past_seq_len=0)" "gpt2-ort past 1"
"$APPROF" model show --model-file "$O" --seq-len 16 --dim past_seq_len=0 --dim total_seq_len=17 > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "gpt2-ort mask 17"
says_text "$T/err" "node 'GptAttention_0' (Attention): field input[3]: the mask 'attention_mask' has 17 key positions, the past (0) and the sequence (16) give 16" "gpt2-ort mask 17"
"$APPROF" model show --model-file "$T/gpt2-ort-bad.onnx" --seq-len 16 --dim past_seq_len=0 --dim total_seq_len=16 > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "gpt2-ort-bad"
says_text "$T/err" "gpt2-ort-bad.onnx: node 'BiasGelu_AddBias_0' (BiasGelu): unsupported operator 'com.microsoft.BiasGelu'" "gpt2-ort-bad"
for m in gpt2-ort gpt2-ort-view; do
    for s in 16 32; do
        "$APPROF" model show --model-file "$T/$m.onnx" --seq-len $s --dim past_seq_len=0 --dim total_seq_len=$s \
            --format json > "$T/o.json" 2> "$T/err" || fail_with "$T/err" "$m.onnx --seq-len $s"
        "$APPROF" model show gpt --num-layers 1 --hidden 64 --heads 4 --seq-len $s --vocab 100 --batch 1 \
            --attention flash --format json > "$T/oz.json" || fail "show gpt --seq-len $s --attention flash"
        a=$(totals < "$T/o.json") b=$(totals < "$T/oz.json")
        [ "$a" = "$b" ] || fail "$m.onnx --seq-len $s: '$a' vs zoo (flash) '$b' (parameters fwd bwd batch)"
        echo "ok: $m.onnx --seq-len $s = zoo (flash): $a"
    done
done
"$APPROF" sweep --model-file "$O" --seq-len 16 --dim past_seq_len=0 --dim total_seq_len=16 --layers 2 \
    --cluster 1x2 --batch 4 --micro-batches 2 --backend model --quiet --db "$T/so.db" 2> "$T/sweep.err" ||
    fail_with "$T/sweep.err" "sweep gpt2-ort"
not_crashed "$T/sweep.err" "sweep gpt2-ort"

# Megatron-LM's GPT-2 as torch.onnx writes it: the zoo's eager block less
# its loss (5 and 3 FLOPs a logit) plus the masking (scores * m, minus
# 10000 (1 - m): 1 FLOP an element forward each, 2 and 1 backward)
O=$T/gpt2-megatron.onnx
"$APPROF" model show --model-file "$O" --seq-len 16 > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "gpt2-megatron unbound"
says_text "$T/err" "input 'past_0': field type.tensor_type.shape.dim[3]: symbolic dimension 'past_seq_len' is not bound" "gpt2-megatron unbound"
for s in 16 32; do
    "$APPROF" model show --model-file "$O" --seq-len $s --dim past_seq_len=0 --format json > "$T/o.json" 2> "$T/err" ||
        fail_with "$T/err" "gpt2-megatron.onnx --seq-len $s"
    "$APPROF" model show gpt --num-layers 1 --hidden 64 --heads 4 --seq-len $s --vocab 100 --batch 1 \
        --attention eager --format json > "$T/oz.json" || fail "show gpt --seq-len $s"
    a=$(totals < "$T/o.json")
    b=$("$PY" -c 'import json, sys; s = int(sys.argv[1]); t = json.load(sys.stdin)["totals"]
print(64 * 100 + 64 * 64 + 4 * 64 + 4 * 64 * 64 + 4 * 64 + 2 * 64 * 256 + 256 + 64 + 2 * 64 + 64 * 100,
      t["fwd_flops"] - 5 * s * 100 + 2 * 4 * s * s, t["bwd_flops"] - 3 * s * 100 + 3 * 4 * s * s, 1)' $s < "$T/oz.json")
    [ "$a" = "$b" ] || fail "gpt2-megatron.onnx --seq-len $s: '$a' vs hand count and zoo (eager) '$b' (parameters fwd bwd batch)"
    echo "ok: gpt2-megatron.onnx --seq-len $s = hand count, zoo (eager) less loss plus masking: $a"
done
"$APPROF" model show --model-file "$O" --seq-len 16 --dim past_seq_len=3 > /dev/null 2> "$T/err" ||
    fail_with "$T/err" "gpt2-megatron.onnx with a past of 3"
"$APPROF" sweep --model-file "$O" --seq-len 16 --dim past_seq_len=0 --layers 2 --cluster 1x2 --batch 4 \
    --micro-batches 2 --backend model --quiet --db "$T/sm.db" 2> "$T/sweep.err" ||
    fail_with "$T/sweep.err" "sweep gpt2-megatron"
not_crashed "$T/sweep.err" "sweep gpt2-megatron"

# Hugging Face's GPT-2 as torch.onnx writes it: the zoo's eager block plus the
# Where of the causal mask
O=$T/gpt2-hf.onnx
for s in 16 32; do
    "$APPROF" model show --model-file "$O" --seq-len $s --format json > "$T/o.json" 2> "$T/err" ||
        fail_with "$T/err" "gpt2-hf.onnx --seq-len $s"
    "$APPROF" model show gpt --num-layers 1 --hidden 64 --heads 4 --seq-len $s --vocab 100 --batch 1 \
        --attention eager --format json > "$T/oz.json" || fail "show gpt --seq-len $s"
    a=$(totals < "$T/o.json")
    b=$("$PY" -c 'import json, sys; s = int(sys.argv[1]); d = json.load(sys.stdin); t = d["totals"]
print(d["parameters"], t["fwd_flops"] + 4 * s * s, t["bwd_flops"] + 4 * s * s, 1)' $s < "$T/oz.json")
    [ "$a" = "$b" ] || fail "gpt2-hf.onnx --seq-len $s: '$a' vs the zoo (eager) plus the Where '$b' (parameters fwd bwd batch)"
    echo "ok: gpt2-hf.onnx --seq-len $s = zoo (eager) plus the Where: $a"
done
p=$("$PY" "$GEN/onnx_counts.py" --params "$O" | cut -d' ' -f2) || fail "onnx_counts.py --params gpt2-hf.onnx"
[ "${a%% *}" = "$p" ] || fail "gpt2-hf.onnx: approf ${a%% *} parameters, python3-onnx $p"
"$APPROF" sweep --model-file "$O" --seq-len 16 --layers 2 --cluster 1x2 --batch 4 --micro-batches 2 \
    --backend model --quiet --db "$T/sh.db" 2> "$T/sweep.err" || fail_with "$T/sweep.err" "sweep gpt2-hf"
not_crashed "$T/sweep.err" "sweep gpt2-hf"

# transformers 4.36+'s causal mask built as torch.onnx writes it (gpt2-mask:
# ConstantOfShape, Trilu, Range > Reshape, Mul, Unsqueeze, Expand with its
# -1 size math, Slice, Equal, And, Where, Add): the zoo's eager block plus
# the mask's kernels, one operation an element each (relu or add; mul 1 and
# 2 backward): Trilu, Greater, Mul, Equal, And, Where over S x S, the
# padding Equal over T = S, the Add over heads x S x S; the fill, the
# ranges and the expanded view cost nothing
O=$T/gpt2-mask.onnx
for s in 16 32; do
    "$APPROF" model show --model-file "$O" --seq-len $s --format json > "$T/o.json" 2> "$T/err" ||
        fail_with "$T/err" "gpt2-mask.onnx --seq-len $s"
    "$APPROF" model show gpt --num-layers 1 --hidden 64 --heads 4 --seq-len $s --vocab 100 --batch 1 \
        --attention eager --format json > "$T/oz.json" || fail "show gpt --seq-len $s"
    a=$(totals < "$T/o.json")
    b=$("$PY" -c 'import json, sys; s = int(sys.argv[1]); d = json.load(sys.stdin); t = d["totals"]
print(d["parameters"], t["fwd_flops"] + 10 * s * s + s, t["bwd_flops"] + 11 * s * s + s, 1)' $s < "$T/oz.json")
    [ "$a" = "$b" ] || fail "gpt2-mask.onnx --seq-len $s: '$a' vs the zoo (eager) plus the mask's kernels '$b'"
    echo "ok: gpt2-mask.onnx --seq-len $s = zoo (eager) plus the built mask: $a"
done
p=$("$PY" "$GEN/onnx_counts.py" --params "$O" | cut -d' ' -f2) || fail "onnx_counts.py --params gpt2-mask.onnx"
[ "${a%% *}" = "$p" ] || fail "gpt2-mask.onnx: approf ${a%% *} parameters, python3-onnx $p"
"$APPROF" sweep --model-file "$O" --seq-len 16 --layers 2 --cluster 1x2 --batch 4 --micro-batches 2 \
    --backend model --quiet --db "$T/sk.db" 2> "$T/sweep.err" || fail_with "$T/sweep.err" "sweep gpt2-mask"
not_crashed "$T/sweep.err" "sweep gpt2-mask"

# onnxruntime-genai's Llama layout (llama-ort: SimplifiedLayerNormalization,
# RotaryEmbedding, GroupQueryAttention with 2 kv heads, SkipSimplified-
# LayerNormalization; llama-ort-mha: MultiHeadAttention, 4 kv heads;
# llama-ort-rms: llama-ort with torch.onnx's decomposed RMSNorms): the
# zoo's llama of the same config (flash) plus the ReduceSum of
# attention_mask for seqlens_k (one add an element of [1, S], forward and
# backward); the cos and sin caches are no parameters
for kv in 2 4; do
    printf '{"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": %d, "intermediate_size": 128, "vocab_size": 100, "num_hidden_layers": 1, "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "tie_word_embeddings": false}\n' \
        $kv > "$T/llama$kv.json"
done
for m in llama-ort:2 llama-ort-mha:4 llama-ort-rms:2; do
    for s in 16 32; do
        "$APPROF" model show --model-file "$T/${m%:*}.onnx" --seq-len $s --dim past_sequence_length=0 \
            --dim total_sequence_length=$s --format json > "$T/o.json" 2> "$T/err" || fail_with "$T/err" "$m --seq-len $s"
        "$APPROF" model show --hf-config "$T/llama${m#*:}.json" --seq-len $s --batch 1 --format json > "$T/oz.json" ||
            fail "llama${m#*:}.json --seq-len $s"
        a=$(totals < "$T/o.json")
        b=$("$PY" -c 'import json, sys; s = int(sys.argv[1]); d = json.load(sys.stdin); t = d["totals"]
print(d["parameters"], t["fwd_flops"] + s, t["bwd_flops"] + s, 1)' $s < "$T/oz.json")
        [ "$a" = "$b" ] || fail "${m%:*}.onnx --seq-len $s: '$a' vs the zoo's llama (flash) plus the ReduceSum '$b'"
        echo "ok: ${m%:*}.onnx --seq-len $s = zoo llama (flash) plus the ReduceSum: $a"
    done
done
O=$T/llama-ort.onnx
"$APPROF" model show --model-file "$O" --seq-len 16 --dim past_sequence_length=3 --dim total_sequence_length=19 \
    > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "llama-ort past 3"
says_text "$T/err" "llama-ort.onnx: node '/model/layers.0/attn/GroupQueryAttention' (GroupQueryAttention): field input[3]: a past key/value cache ('past_key_values.0.key') is inference, not a training step: bind its length to 0 (--dim past_sequence_length=0)" "llama-ort past 3"
"$APPROF" model show --model-file "$T/llama-ort-window.onnx" --seq-len 16 --dim past_sequence_length=0 \
    --dim total_sequence_length=16 > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "llama-ort-window"
says_text "$T/err" "node '/model/layers.0/attn/GroupQueryAttention' (GroupQueryAttention): field attribute local_window_size: a sliding window is not supported" "llama-ort-window"
"$APPROF" sweep --model-file "$O" --seq-len 16 --dim past_sequence_length=0 --dim total_sequence_length=16 \
    --layers 2 --cluster 1x2 --batch 4 --micro-batches 2 --backend model --quiet --db "$T/sl.db" 2> "$T/sweep.err" ||
    fail_with "$T/sweep.err" "sweep llama-ort"
not_crashed "$T/sweep.err" "sweep llama-ort"

# one Llama layer as torch.onnx writes transformers' eager LlamaForCausalLM
# (llama-torch: the rotary tables from the buffer inv_freq, Cos, Sin, rotate_half
# written out, repeat_kv as Expand and Reshape, the 4.36+ causal mask,
# decomposed RMSNorms; llama-torch-mha: 4 kv heads, no repeat): inv_freq is
# a buffer (no parameter; python3-onnx's sum over the initializers less its
# D/2 agrees), and the FLOPs are the zoo's llama of the same config.json
# (eager) plus, at batch 1, S positions, D = 16: the tables (inv_freq x
# positions: 2 D/2 S forward, twice that backward; Cos, Sin: S D each way
# each), the rotary as written (q * cos, x2's Neg over half, rotate * sin,
# Add: 3.5 an element forward, 5.5 backward, over (H + KV) S D, where the
# zoo's rope charges 3 and 3) and the mask's kernels as for gpt2-mask (10
# S^2 + S forward, 11 S^2 + S backward); the scale of the scores and the
# attention_scaling are Muls by one-element constants (folded, as in every
# decoder here); repeat_kv's copies are concats (no FLOPs, as the zoo's
# broadcasting batched matmuls)
for m in llama-torch:2 llama-torch-mha:4; do
    for s in 16 32; do
        "$APPROF" model show --model-file "$T/${m%:*}.onnx" --seq-len $s --format json > "$T/o.json" 2> "$T/err" ||
            fail_with "$T/err" "$m --seq-len $s"
        "$APPROF" model show --hf-config "$T/llama${m#*:}.json" --seq-len $s --batch 1 --attention eager \
            --format json > "$T/oz.json" || fail "llama${m#*:}.json --seq-len $s --attention eager"
        a=$(totals < "$T/o.json")
        b=$("$PY" -c 'import json, sys; s, kv = int(sys.argv[1]), int(sys.argv[2]); d = json.load(sys.stdin)
t = d["totals"]; D, H = 16, 4; e = (H + kv) * s * D
print(d["parameters"], int(t["fwd_flops"] + 2 * (D // 2) * s + 2 * s * D + e // 2 + 10 * s * s + s),
      int(t["bwd_flops"] + 4 * (D // 2) * s + 2 * s * D + 5 * e // 2 + 11 * s * s + s), 1)' $s ${m#*:} < "$T/oz.json")
        [ "$a" = "$b" ] || fail "${m%:*}.onnx --seq-len $s: '$a' vs the zoo's llama (eager) plus tables, written rotary, mask '$b'"
        echo "ok: ${m%:*}.onnx --seq-len $s = zoo llama (eager) plus tables, written rotary and mask: $a"
    done
    # at batch 2 inv_freq's Expand broadcasts over the batch (refused as a
    # parameter's before the buffer rule)
    "$APPROF" model show --model-file "$T/${m%:*}.onnx" --seq-len 16 --batch 2 --format json > "$T/o2.json" \
        2> "$T/err" || fail_with "$T/err" "$m --batch 2"
    b=$(totals < "$T/o2.json")
    [ "${b%% *}" = "${a%% *}" ] && [ "${b##* }" = 2 ] || fail "${m%:*}.onnx --batch 2: '$b' (parameters fwd bwd batch)"
    p=$("$PY" "$GEN/onnx_counts.py" --params "$T/${m%:*}.onnx" | cut -d' ' -f2) || fail "onnx_counts.py --params ${m%:*}.onnx"
    [ "${a%% *}" = $((p - 8)) ] || fail "${m%:*}.onnx: approf ${a%% *} parameters, python3-onnx $p less inv_freq's 8"
done
"$APPROF" sweep --model-file "$T/llama-torch.onnx" --seq-len 16 --layers 2 --cluster 1x2 --batch 4 --micro-batches 2 \
    --backend model --quiet --db "$T/st.db" 2> "$T/sweep.err" || fail_with "$T/sweep.err" "sweep llama-torch"
not_crashed "$T/sweep.err" "sweep llama-torch"

# an empty input (a dimension bound to 0) that another node reads; the first
# input empty
"$APPROF" model show --model-file "$T/empty-read.onnx" --dim past=0 > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "empty read"
says_text "$T/err" "node 'relu_p' (Relu): field input[0]: 'p' is empty (a dimension bound to 0)" "empty read"
"$APPROF" model show --model-file "$T/empty-read.onnx" --dim past=1 > /dev/null 2> "$T/err" ||
    fail_with "$T/err" "empty-read.onnx --dim past=1"
"$APPROF" model show --model-file "$T/gpt2-megatron.onnx" --seq-len 0 > /dev/null 2> "$T/err"
expect_rc 2 $? "$T/err" "--seq-len 0"
"$APPROF" model show --model-file "$T/gpt2-megatron.onnx" --dim seq_len=0 --dim past_seq_len=0 > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "first input empty"
says_text "$T/err" "input 'input_ids': field type.tensor_type.shape.dim[1]: the first input cannot be empty" "first input empty"

# refusals name the node and the operator
refused() {
    "$APPROF" model show --model-file "$T/$1.onnx" > /dev/null 2> "$T/err"
    expect_rc 1 $? "$T/err" "$1"
    says_text "$T/err" "$1.onnx: $2" "$1"
}
refused mask_used "node 'drop' (Dropout): field output[1]: a dropout mask that a node reads is not supported"
refused pad_misfit "node 'pool' (MaxPool): field attribute pads: no symmetric padding gives the output size 4"
refused squeeze_bad "node 'sq' (Squeeze): field axes: axis 1 is not of size 1"
refused ln_leak "node 'ln.sub' (Sub): field output[0]: read by node 'leak' (Add) outside the decomposed LayerNormalization it is part of"
refused gelu_leak "node 'gelu.erf' (Erf): field output[0]: read by node 'leak' (Add) outside the GELU written with Erf it is part of"
refused tanh_leak "node 'gelu.tanh' (Tanh): field output[0]: read by node 'leak' (Add) outside the GELU written with Tanh it is part of"
refused expand-grad "node 'bad' (Expand): field input[1]: broadcasting 'unsq', which needs a gradient (a parameter or computed from one), along more than one axis of size 1 is not supported"
refused sin-grad "node 'bad' (Sin): field input[0]: 'proj' needs a gradient (a parameter or computed from one): only the position tables of a rotary embedding are supported"
refused reduce-axis "node 'bad' (ReduceSum): field axes: only the trailing axes are supported"
refused mha-bias "node 'bad' (MultiHeadAttention): field input[3]: a q/k/v bias is not supported (give it as an Add)"
echo "ok: ONNX graphs as exporters write them"
