#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The gradient buffers' width in apsolve's HSDP and expert-parallel memory
# and, at the end, Adam's state widths (the spec's optimizer_* fields)
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

hsdp_case() { # SPEC ADAM_BYTES WHAT: HSDP dp_shard=4 over ZeRO-3 on 8 GPUs adds
  # 1/4 - 1/8 of the elements at (2 + 4) bytes on the backward's peak and
  # ADAM_BYTES of Adam's state
  db=$w/g-$2.db
  "$approf" sweep --db "$db" --model gpt --num-layers 2 --hidden 256 --heads 4 --seq-len 128 \
    --vocab 1000 --cluster 1x8 --hardware "$1" --batch 16 --micro-batches 2 --layers 2 \
    --memory-levels 1 --recompute none --zero 3 --quiet >"$w/out" 2>&1 ||
    fail_with "$w/out" "gpt sweep, $3"
  z3=$(need "$db" dp=8,tp=1,pp=1,zero=3) || exit 1
  h4=$(need "$db" dp=8,tp=1,pp=1,zero=3,dp_shard=4) || exit 1
  "$py" - "$z3" "$h4" "$2" <<'EOF' || fail "HSDP memory, $3"
import sys
z3, h4, adam = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
elems, x = 2098176, 1 / 4 - 1 / 8
want = round(elems * 2 * x * (1 + 4 / 2)) + round(elems * adam * x)
assert h4 - z3 == want, (h4 - z3, want)
assert adam != 12 or want == 4720896, want
print("HSDP dp_shard=4, Adam %d bytes: +%d bytes" % (adam, h4 - z3))
EOF
}

ep_case() { # SPEC BYTES WHAT: ep=2 drops half the experts' elements, BYTES each
  db=$w/m-$2.db
  "$approf" sweep --db "$db" --model mixtral --num-layers 2 --hidden 256 --heads 4 --seq-len 128 \
    --vocab 1000 --cluster 1x4 --hardware "$1" --batch 16 --micro-batches 4 --layers 2 \
    --quiet >"$w/out" 2>&1 || fail_with "$w/out" "mixtral sweep, $3"
  plain=$(need "$db" dp=4,tp=1,pp=1) || exit 1
  ep=$(need "$db" dp=4,tp=1,pp=1,ep=2) || exit 1
  "$py" - "$plain" "$ep" "$2" <<'EOF' || fail "ep memory, $3"
import sys
plain, ep, per = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
half = 2 * 3 * 8 * 256 * 14336 // 2
assert plain - ep == per * half, (plain - ep, per * half)
print("ep=2, %d bytes an element: -%d bytes" % (per, plain - ep))
EOF
}

hsdp_case "$w/f32.spec" 12 "4-byte gradient buffers"
ep_case "$w/f32.spec" 18 "4-byte gradient buffers"

# Adam's state in bf16 with no separate main copy (the spec's optimizer_*
# widths: NeMo's Apex distributed_fused_adam with dtype bf16 on a bf16
# model, docs/megatron-memory.md): the initial state's share is
# costdb_adam_state_bytes' 2 + 2 bytes a parameter, not 12. Hand counts:
# HSDP 2 x x x (1 + 2) + 4 x x bytes an element; ep (2 + 4 + 4) a
# dropped expert element.
sed 's/^optimizer_main_param_bytes = .*/optimizer_main_param_bytes = 2/
s/^optimizer_exp_avg_bytes = .*/optimizer_exp_avg_bytes = 2/
s/^optimizer_exp_avg_sq_bytes = .*/optimizer_exp_avg_sq_bytes = 2/
s/^name = .*/name = h100-nemo-adam/' "$w/f32.spec" >"$w/bf16adam.spec"
grep -q '^optimizer_exp_avg_sq_bytes = 2$' "$w/bf16adam.spec" || fail "no optimizer widths in the spec"
hsdp_case "$w/bf16adam.spec" 4 "bf16 Adam state"
ep_case "$w/bf16adam.spec" 10 "bf16 Adam state"
