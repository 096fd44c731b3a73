#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The corpus of real ONNX exports (shared/onnx-real, SOURCES.md there: the
# ONNX model zoo's CNNs as onnx-caffe2 wrote them, weights external and not
# shipped), on the command line:
# - approf model show loads every file as shipped, exit 0, with the warning
#   that the external weights are not beside the model, and its parameter
#   count equals the one tests/model/onnx_counts.py computes from the same
#   file with python3-onnx alone;
# - a sweep runs on two of them (SqueezeNet, GoogLeNet with its one-window
#   average pool of asymmetric pads).
# Skipped (77) without the ONNX reader or without the corpus.
# Usage: cli_onnx_real.sh APPROF yes|no CORPUS_DIR ONNX_COUNTS_PY
set -u
APPROF=$1 HAVE_ONNX=$2 DIR=$3 COUNTS=$4
. "$(dirname "$0")/../lib.sh"
if [ "$HAVE_ONNX" != yes ]; then
    echo "skip: this build has no ONNX reader"
    exit 77
fi
if [ ! -f "$DIR/SOURCES.md" ]; then
    echo "skip: the corpus of real exports is not in the tree ($DIR)"
    exit 77
fi
temp_dir T
PY=
for p in /usr/bin/python3 python3; do
    if "$p" -c 'import onnx' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || fail "python3-onnx is needed to count the corpus independently (tools/install-deps.sh installs it)"

n=0
for f in "$DIR"/*.onnx; do
    m=$(basename "$f" .onnx)
    "$APPROF" model show --model-file "$f" --format json > "$T/$m.json" 2> "$T/$m.err" ||
        fail_with "$T/$m.err" "$m: model show"
    says_text "$T/$m.err" "its external data '$m.onnx.data' is not beside the model" "$m: external weights"
    a=$("$PY" -c 'import json, sys; print(json.load(sys.stdin)["parameters"])' < "$T/$m.json") ||
        fail "$m: model show --format json"
    p=$("$PY" "$COUNTS" "$f" | cut -d' ' -f2) || fail "$m: onnx_counts.py"
    [ "$a" = "$p" ] || fail "$m: approf counts $a parameters, python3-onnx $p"
    echo "ok: $m: $a parameters"
    n=$((n + 1))
done
[ "$n" -ge 9 ] || fail "only $n files in $DIR"

for m in squeezenet inception_v1; do
    "$APPROF" sweep --model-file "$DIR/$m.onnx" --layers 2 --cluster 1x2 --batch 2 --micro-batches 2 \
        --backend model --quiet --db "$T/$m.db" > /dev/null 2> "$T/$m.sweep.err" ||
        fail_with "$T/$m.sweep.err" "$m: sweep"
    not_crashed "$T/$m.sweep.err" "$m: sweep"
    echo "ok: $m: a sweep runs"
done
