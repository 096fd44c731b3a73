#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# 'approf models' and 'approf model show|export': exit codes, the exact
# parameter count, JSON keys, export -> --model-file gives the same output,
# a bad model file fails with exit 1 naming the op and field.
set -u
APPROF=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$APPROF" models > "$T/models" || fail "approf models"
for m in mlp resnet50 wide_resnet gpt bert swin; do
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
cmp -s "$T/a" "$T/b" || fail "export/load differs"
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
echo ok
