#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ONNX model files: a ResNet-50 and a GPT-2 block written with Debian's
# python3-onnx (onnx_models.py) load with the zoo's exact parameter count and
# forward and backward FLOPs; the format is found by content, not by name; a
# symbolic batch is one sample; a sweep runs on one; truncated and garbage
# files, an unsupported operator and a symbolic non-batch dim exit 1 naming
# the file (and the node or field). Without ONNX support in the build, a
# binary file is refused with the install hint and the rest is skipped (77).
# Usage: cli_onnx.sh APPROF yes|no MODELS_PY
set -u
APPROF=$1 HAVE_ONNX=$2 MODELS=$3
. "$(dirname "$0")/../lib.sh"
temp_dir T

printf '\010\377\377\377\377' > "$T/garbage.onnx"
"$APPROF" model show --model-file "$T/garbage.onnx" > /dev/null 2> "$T/err"
[ $? -eq 1 ] || fail "garbage .onnx must exit 1"
grep -q "garbage.onnx: " "$T/err" || fail "garbage message names the file: $(cat "$T/err")"
if [ "$HAVE_ONNX" != yes ]; then
    grep -q "this build has no ONNX support: install libprotobuf-c-dev and protobuf-c-compiler" "$T/err" ||
        fail "no-ONNX message: $(cat "$T/err")"
    echo "skip: this build has no ONNX reader"
    exit 77
fi
grep -q "garbage.onnx: field (ModelProto): not a valid ONNX protobuf" "$T/err" || fail "garbage message: $(cat "$T/err")"

# 3000 subgraphs nested Graph -> Node -> Attribute -> Graph (110 KB) crashed
# protobuf-c's recursive unpacker: refused before unpacking, exit 1
python3 "$(dirname "$0")/../fuzz/onnx_seeds.py" nested 3000 "$T/nested.onnx" || fail "writing nested.onnx"
"$APPROF" model show --model-file "$T/nested.onnx" > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "nested ONNX, model show"
says_text "$T/err" "nested.onnx: field graph: messages nested deeper than 100 levels" "nested ONNX"
"$APPROF" sweep --model-file "$T/nested.onnx" --db "$T/n.db" --backend model > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "nested ONNX, sweep"
says_text "$T/err" "nested.onnx: field graph: messages nested deeper" "nested ONNX, sweep"

PY=
for p in /usr/bin/python3 python3; do
    if "$p" -c 'import onnx' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || fail "python3-onnx is needed to write the test models (tools/install-deps.sh installs it)"
for m in resnet gpt2 unsupported symbolic; do
    "$PY" "$MODELS" "$m" "$T/$m.onnx" || fail "writing $m.onnx"
done

# parameters, fwd_flops, bwd_flops of approf model show --format json
totals() {
    "$PY" -c 'import json, sys; d = json.load(sys.stdin); t = d["totals"]
print(d["parameters"], t["fwd_flops"], t["bwd_flops"], d["batch_size"])'
}
"$APPROF" model show --model-file "$T/resnet.onnx" --format json > "$T/r.json" || fail "show resnet.onnx"
"$APPROF" model show resnet50 --dataset cifar10 --batch 2 --format json > "$T/rz.json" || fail "show resnet50"
a=$(totals < "$T/r.json") b=$(totals < "$T/rz.json")
[ "$a" = "$b" ] || fail "ResNet-50: ONNX '$a' vs zoo '$b' (parameters fwd bwd batch)"
echo "ok: ResNet-50 from ONNX = zoo: $a"

# symbolic batch: one sample
"$APPROF" model show --model-file "$T/gpt2.onnx" --format json > "$T/g.json" || fail "show gpt2.onnx"
"$APPROF" model show gpt --num-layers 1 --hidden 64 --heads 4 --seq-len 16 --vocab 100 --batch 1 \
    --format json > "$T/gz.json" || fail "show gpt"
a=$(totals < "$T/g.json") b=$(totals < "$T/gz.json")
[ "$a" = "$b" ] || fail "GPT-2 block: ONNX '$a' vs zoo '$b' (parameters fwd bwd batch)"
echo "ok: GPT-2 block from ONNX = zoo: $a"

# content, not the name: ONNX bytes named .json, JSON named .onnx
cp "$T/gpt2.onnx" "$T/gpt2-named.json"
"$APPROF" model show --model-file "$T/gpt2-named.json" --format json > "$T/g2.json" || fail "ONNX named .json"
same_file "$T/g.json" "$T/g2.json" "ONNX named .json loads differently"
"$APPROF" model export mlp --batch 4 > "$T/mlp.onnx" || fail "export mlp"
"$APPROF" model show --model-file "$T/mlp.onnx" > /dev/null || fail "JSON named .onnx"

# a sweep of an ONNX model: the symbolic batch follows the sweep's micro-batch
"$APPROF" sweep --model-file "$T/gpt2.onnx" --layers 2 --cluster 1x2 --batch 4 --micro-batches 4 \
    --backend model --quiet --db "$T/s.db" 2> "$T/sweep.err" || fail "sweep: $(cat "$T/sweep.err")"
"$APPROF" sweep --model-file "$T/gpt2.onnx" --layers 2 --cluster 1x2 --batch 8 --micro-batches 2 \
    --backend model --quiet --db "$T/s4.db" 2> "$T/sweep4.err" ||
    fail "sweep at micro-batch 4: $(cat "$T/sweep4.err")"

# external data (onnx.save_model(..., save_as_external_data=True)): only
# shapes and dtypes are read, so the model equals its inline copy; a small
# constant (the Reshape's shape) is read from the file; a missing or short
# file is a warning, not an error
mkdir -p "$T/ext" || fail "mkdir"
for m in external external-big inline; do
    "$PY" "$MODELS" "$m" "$T/ext/$m.onnx" || fail "writing $m.onnx"
done
[ -s "$T/ext/external.onnx.data" ] && [ -s "$T/ext/external-big.onnx.data" ] || fail "no external data written"
"$APPROF" model show --model-file "$T/ext/inline.onnx" --layers 1 --format json > "$T/ei.json" || fail "show inline.onnx"
for m in external external-big; do
    "$APPROF" model show --model-file "$T/ext/$m.onnx" --layers 1 --format json > "$T/e.json" 2> "$T/err" ||
        fail "show $m.onnx: $(cat "$T/err")"
    [ ! -s "$T/err" ] || fail "$m.onnx with its data: $(cat "$T/err")"
    a=$(totals < "$T/e.json") b=$(totals < "$T/ei.json")
    [ "$a" = "$b" ] || fail "$m.onnx '$a' vs inline '$b'"
done
[ "$(totals < "$T/ei.json")" = "808 1608 2120 1" ] || fail "the MLP: $(totals < "$T/ei.json")"
mv "$T/ext/external-big.onnx.data" "$T/ext/moved" || fail "mv"
"$APPROF" model show --model-file "$T/ext/external-big.onnx" --layers 1 --format json > "$T/e.json" 2> "$T/err"
expect_rc 0 $? "$T/err" "external data missing"
says_text "$T/err" "approf: warning: $T/ext/external-big.onnx: initializer 'w1': its external data 'external-big.onnx.data' is not beside the model" "external data missing"
[ "$(totals < "$T/e.json")" = "$(totals < "$T/ei.json")" ] || fail "external data missing: other counts"
head -c 100 "$T/ext/moved" > "$T/ext/external-big.onnx.data"
"$APPROF" model show --model-file "$T/ext/external-big.onnx" --layers 1 > /dev/null 2> "$T/err"
expect_rc 0 $? "$T/err" "external data short"
says_text "$T/err" "initializer 'w2': its external data 'external-big.onnx.data' holds 100 bytes, fewer than offset 2048 + length 1024" "external data short"
"$APPROF" sweep --model-file "$T/ext/external-big.onnx" --layers 1 --cluster 1x2 --batch 2 --micro-batches 1 \
    --backend model --quiet --db "$T/ext.db" 2> "$T/err" || fail "sweep with short external data: $(cat "$T/err")"
says_text "$T/err" "approf: warning: $T/ext/external-big.onnx: initializer 'w1'" "sweep, external data short"
# said when the model is read, before the sweep profiles anything
"$APPROF" sweep --model-file "$T/ext/external-big.onnx" --layers 1 --cluster 1x2 --batch 2 --micro-batches 1 \
    --backend model --db "$T/ext2.db" 2> "$T/err" > /dev/null || fail "sweep with short external data: $(cat "$T/err")"
w=$(grep -n "^approf: warning: .*external-big.onnx: initializer 'w1'" "$T/err" | head -1 | cut -d: -f1)
p=$(grep -n "^- Profiling for submesh" "$T/err" | head -1 | cut -d: -f1)
[ -n "$w" ] && [ -n "$p" ] && [ "$w" -lt "$p" ] ||
    fail "sweep: the external data warning (line $w) is not before the profiling (line $p): $(cat "$T/err")"
"$PY" - "$T/ext/external-big.onnx" <<'PYEOF' || fail "writing a huge offset"
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
for e in m.graph.initializer[0].external_data:
    if e.key == "offset":
        e.value = "9223372036854775807"
onnx.save(m, sys.argv[1])
PYEOF
cp "$T/ext/moved" "$T/ext/external-big.onnx.data" || fail "cp"
"$APPROF" model show --model-file "$T/ext/external-big.onnx" --layers 1 > /dev/null 2> "$T/err"
expect_rc 0 $? "$T/err" "huge external_data.offset"
says_text "$T/err" "holds 3072 bytes, fewer than offset 9223372036854775807 + length 2048" "huge offset"
"$PY" - "$T/ext/external-big.onnx" <<'PYEOF' || fail "writing a bad length"
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
for e in m.graph.initializer[0].external_data:
    if e.key == "length":
        e.value = "12x"
onnx.save(m, sys.argv[1])
PYEOF
"$APPROF" model show --model-file "$T/ext/external-big.onnx" --layers 1 > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "bad external_data.length"
says_text "$T/err" "external-big.onnx: initializer 'w1': field external_data.length: '12x' is not a byte count" "bad length"
echo "ok: external data"

# bad files: exit 1, the file and what is wrong named
head -c 2000 "$T/resnet.onnx" > "$T/truncated.onnx"
"$APPROF" model show --model-file "$T/truncated.onnx" > /dev/null 2> "$T/err"
[ $? -eq 1 ] || fail "truncated .onnx must exit 1"
grep -q "truncated.onnx: field (ModelProto): not a valid ONNX protobuf" "$T/err" || fail "truncated message: $(cat "$T/err")"
"$APPROF" model show --model-file "$T/unsupported.onnx" > /dev/null 2> "$T/err"
[ $? -eq 1 ] || fail "unsupported operator must exit 1"
grep -q "unsupported.onnx: node 'my_erf' (Erf): unsupported operator 'Erf'" "$T/err" ||
    fail "unsupported message: $(cat "$T/err")"
"$APPROF" model show --model-file "$T/symbolic.onnx" > /dev/null 2> "$T/err"
[ $? -eq 1 ] || fail "symbolic non-batch dim must exit 1"
grep -q "symbolic.onnx: input 'x': field type.tensor_type.shape.dim\[1\]: symbolic dimension 'seq'" "$T/err" ||
    fail "symbolic message: $(cat "$T/err")"
grep -q "is not bound (give --seq-len N or --dim seq=N" "$T/err" || fail "symbolic hint: $(cat "$T/err")"
# symbolic dims bound: --batch (the batch symbol), --seq-len (a sequence
# name), --dim NAME=N (any name); an unused --dim and --dim of the batch are refused
"$APPROF" model show --model-file "$T/symbolic.onnx" --batch 3 --seq-len 8 --format json > "$T/b.json" ||
    fail "symbolic.onnx --batch 3 --seq-len 8"
a=$(totals < "$T/b.json")
[ "$a" = "0 48 48 3" ] || fail "symbolic.onnx --batch 3 --seq-len 8: '$a' (two relus of 3 x 8)"
"$APPROF" model show --model-file "$T/symbolic.onnx" --dim seq=5 --seq-len 8 --format json > "$T/b.json" ||
    fail "symbolic.onnx --dim seq=5"
a=$(totals < "$T/b.json")
[ "$a" = "0 10 10 1" ] || fail "symbolic.onnx --dim seq=5 (over --seq-len 8): '$a'"
"$APPROF" model show --model-file "$T/symbolic.onnx" --dim seq=5 --dim hidden=3 > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "unused --dim"
says_text "$T/err" "symbolic.onnx: field graph.input: no input has a symbolic dimension 'hidden' (--dim hidden=3)" "unused --dim"
"$APPROF" model show --model-file "$T/symbolic.onnx" --dim batch=4 --dim seq=5 > /dev/null 2> "$T/err"
expect_rc 1 $? "$T/err" "--dim of the batch"
says_text "$T/err" "symbolic dimension 'batch' is the batch: give the batch (--batch)" "--dim of the batch"
"$APPROF" model show mlp --dim seq=5 > /dev/null 2> "$T/err"
expect_rc 2 $? "$T/err" "--dim without --model-file"
"$APPROF" model show --model-file "$T/gpt2.onnx" --batch 2 --format json > "$T/g.json" || fail "show gpt2.onnx --batch 2"
"$APPROF" model show gpt --num-layers 1 --hidden 64 --heads 4 --seq-len 16 --vocab 100 --batch 2 \
    --format json > "$T/gz.json" || fail "show gpt --batch 2"
a=$(totals < "$T/g.json") b=$(totals < "$T/gz.json")
[ "$a" = "$b" ] || fail "GPT-2 block --batch 2: ONNX '$a' vs zoo '$b'"
"$APPROF" sweep --model-file "$T/unsupported.onnx" --batch 2 --micro-batches 1 --backend model --quiet --db "$T/u.db" 2> "$T/err"
[ $? -eq 1 ] || fail "sweep of an unsupported model must exit 1"
grep -q "node 'my_erf' (Erf)" "$T/err" || fail "sweep message: $(cat "$T/err")"
echo "ok: ONNX model files"
