#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The gradient buffers' width in apsolve's HSDP and expert-parallel memory
# (solver/hsdp.c, solver/expert_parallel.c; docs/megatron-memory.md): on a
# copy of h100-sxm with grad_reduce_bytes = 4 (Megatron's f32 main_grad of
# a bf16 model) a changed parameter moves its bf16 weight and its 4-byte
# gradient buffer (costdb_grad_buffer_ratio, the stage program's rule),
# not two bf16 copies. Hand counts:
# - HSDP dp_shard=4 of ZeRO-3 over 8 GPUs (the small GPT of hsdp.sh, its
#   2,098,176 parameter elements): each GPU holds 1/4 - 1/8 more of them,
#   (2 + 4) bytes on the backward's peak and Adam's 12 in the initial state;
# - ep=2 of the small Mixtral of expert_parallel.sh (88,080,384 expert
#   elements a GPU no longer holds): 2 + 4 + 12 = 18 bytes each, where the
#   spec's default width gives 16.
# Usage: grad_width.sh APPROF APSOLVE PYTHON
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
"$approf" hardware show h100-sxm >"$w/show" 2>"$w/err" || fail_with "$w/err" "hardware show"
grep -q '^grad_reduce_bytes = ' "$w/show" || fail "h100-sxm shows no grad_reduce_bytes"
sed 's/^grad_reduce_bytes = .*/grad_reduce_bytes = 4/' "$w/show" >"$w/f32.spec"

need() { # DB KNOBS: the first stage's memory_needed of --parallel KNOBS
  "$apsolve" --db "$1" --no-store --format json --quiet --parallel "$2" >"$w/p.json" \
    2>"$w/err" || fail_with "$w/err" "--parallel $2"
  "$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["plans"][0]["stages"][0]["memory_needed"])' "$w/p.json" ||
    fail "memory_needed of --parallel $2"
}

g=$w/g.db
"$approf" sweep --db "$g" --model gpt --num-layers 2 --hidden 256 --heads 4 --seq-len 128 \
  --vocab 1000 --cluster 1x8 --hardware "$w/f32.spec" --batch 16 --micro-batches 2 --layers 2 \
  --memory-levels 1 --recompute none --zero 3 --quiet >"$w/out" 2>&1 ||
  fail_with "$w/out" "gpt sweep"
z3=$(need "$g" dp=8,tp=1,pp=1,zero=3) || exit 1
h4=$(need "$g" dp=8,tp=1,pp=1,zero=3,dp_shard=4) || exit 1
"$py" - "$z3" "$h4" <<'EOF' || fail "HSDP memory with 4-byte gradient buffers"
import sys
z3, h4 = int(sys.argv[1]), int(sys.argv[2])
elems, x = 2098176, 1 / 4 - 1 / 8
want = round(elems * 2 * x * (1 + 4 / 2)) + round(elems * 12 * x)
assert h4 - z3 == want == 4720896, (h4 - z3, want)
print("HSDP dp_shard=4: +%d bytes" % (h4 - z3))
EOF

m=$w/m.db
"$approf" sweep --db "$m" --model mixtral --num-layers 2 --hidden 256 --heads 4 --seq-len 128 \
  --vocab 1000 --cluster 1x4 --hardware "$w/f32.spec" --batch 16 --micro-batches 4 --layers 2 \
  --quiet >"$w/out" 2>&1 || fail_with "$w/out" "mixtral sweep"
plain=$(need "$m" dp=4,tp=1,pp=1) || exit 1
ep=$(need "$m" dp=4,tp=1,pp=1,ep=2) || exit 1
"$py" - "$plain" "$ep" <<'EOF' || fail "ep memory with 4-byte gradient buffers"
import sys
plain, ep = int(sys.argv[1]), int(sys.argv[2])
half = 2 * 3 * 8 * 256 * 14336 // 2
assert plain - ep == 18 * half, (plain - ep, 18 * half)
print("ep=2: -%d bytes" % (plain - ep))
EOF
