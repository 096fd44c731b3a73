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
g2=$w/g2.db
"$approf" sweep --db "$g2" --model gpt --num-layers 2 --hidden 256 --heads 4 --seq-len 128 \
  --vocab 1000 --cluster 1x8 --hardware "$w/bf16adam.spec" --batch 16 --micro-batches 2 --layers 2 \
  --memory-levels 1 --recompute none --zero 3 --quiet >"$w/out" 2>&1 ||
  fail_with "$w/out" "gpt sweep, bf16 Adam"
z3=$(need "$g2" dp=8,tp=1,pp=1,zero=3) || exit 1
h4=$(need "$g2" dp=8,tp=1,pp=1,zero=3,dp_shard=4) || exit 1
"$py" - "$z3" "$h4" <<'EOF2' || fail "HSDP memory with bf16 Adam state"
import sys
z3, h4 = int(sys.argv[1]), int(sys.argv[2])
elems, x = 2098176, 1 / 4 - 1 / 8
want = round(elems * 2 * x * (1 + 4 / 2)) + round(elems * 4 * x)
assert h4 - z3 == want, (h4 - z3, want)
print("HSDP dp_shard=4, bf16 Adam: +%d bytes" % (h4 - z3))
EOF2
m2=$w/m2.db
"$approf" sweep --db "$m2" --model mixtral --num-layers 2 --hidden 256 --heads 4 --seq-len 128 \
  --vocab 1000 --cluster 1x4 --hardware "$w/bf16adam.spec" --batch 16 --micro-batches 4 --layers 2 \
  --quiet >"$w/out" 2>&1 || fail_with "$w/out" "mixtral sweep, bf16 Adam"
plain=$(need "$m2" dp=4,tp=1,pp=1) || exit 1
ep=$(need "$m2" dp=4,tp=1,pp=1,ep=2) || exit 1
"$py" - "$plain" "$ep" <<'EOF2' || fail "ep memory with bf16 Adam state"
import sys
plain, ep = int(sys.argv[1]), int(sys.argv[2])
half = 2 * 3 * 8 * 256 * 14336 // 2
assert plain - ep == 10 * half, (plain - ep, 10 * half)
print("ep=2, bf16 Adam: -%d bytes" % (plain - ep))
EOF2
