#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The framework's communication timing, end to end: a spec file's
# grad_overlap, tp_comm_overlap and grad_reduce_bytes
# (schemas/hardware-spec.md) reach the sweep's summary and its entries.
#  1. The summary says what the spec assumes (gradient sync under or after
#     the backward, tensor-parallel collectives after the kernels or under
#     the GEMMs, gradients reduced in the model's dtype or in f32, and
#     accumulated by add kernels or inside the GEMMs).
#  2. Sweeping the same model with the tensor-parallel collectives hidden
#     under the GEMMs and the gradients accumulated and reduced in f32:
#     every forward entry on one GPU (no collective) costs the same and
#     every backward one more (its gradient accumulation reads and writes
#     f32), every entry on 2, 4 or 8 GPUs (tensor-parallel collectives)
#     costs less, and none more.
#  3. A sweep with ZeRO-3 (and a spec with grad_accum_fusion = 1) says
#     how its gathers are timed (and that the gradients are accumulated
#     inside the GEMMs); one without, nothing about ZeRO-3.
#  4. With the gradient sync after the backward (grad_overlap 0), the
#     apply-grad cost of every entry whose replicated parameters are
#     synchronised grows, and the one-GPU entries' does not change.
#  5. With a linear layer's backward collectives issued asynchronously
#     (tp_async_grad = 1, Megatron-LM 2022) the summary says so; with the
#     leaner (Megatron-style) shardings in the sweep (--memory-levels 3),
#     the one-GPU entries cost the same, the tensor-parallel ones less in
#     all (the ILP weighs the overlap too, so it may shard otherwise: an
#     entry can move either way), and some backward entries less.
# Usage: comm_timing.sh APPROF SQLITE3 WORKDIR
set -euo pipefail
approf=$(realpath "$1") sqlite=$2 work=$3
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"; cd "$work" || fail "cd $work"

"$approf" hardware show h100-sxm > a.spec || fail "hardware show"
grep -qx 'grad_overlap = 1' a.spec || fail "h100-sxm: expected grad_overlap = 1"
grep -qx 'tp_comm_overlap = 0' a.spec || fail "h100-sxm: expected tp_comm_overlap = 0"
grep -qx 'grad_reduce_bytes = 0' a.spec || fail "h100-sxm: expected grad_reduce_bytes = 0"
grep -qx 'grad_accum_fusion = 0' a.spec || fail "h100-sxm: expected grad_accum_fusion = 0"
sed -e 's/^grad_accum_fusion = 0$/grad_accum_fusion = 1/' a.spec > c.spec
grep -qx 'tp_async_grad = 0' a.spec || fail "h100-sxm: expected tp_async_grad = 0"
sed -e 's/^tp_async_grad = 0$/tp_async_grad = 1/' a.spec > d.spec
sed -e 's/^tp_comm_overlap = 0$/tp_comm_overlap = 1/' -e 's/^grad_overlap = 1$/grad_overlap = 0/' \
  -e 's/^grad_reduce_bytes = 0$/grad_reduce_bytes = 4/' a.spec > b.spec
for s in a b; do
  "$approf" sweep --model gpt --preset gpt2-small --layers 2 --cluster 1x8 --batch 16 \
    --micro-batches 2 --logical-space model_parallel_only --backend model --variants alpa \
    --hardware "$s.spec" --db "$s.db" >/dev/null 2>"$s.err" || fail_with "$s.err" "sweep $s"
done
grep -qF ' - communication: gradient sync under the backward (grad_overlap 1), tensor-parallel collectives after the kernels (tp_comm_overlap 0), gradients reduced in the model'"'"'s dtype and accumulated by add kernels (grad_accum_fusion 0)' a.err ||
  fail_with a.err "summary of the built-in's timing"
grep -qF ' - communication: gradient sync after the backward (grad_overlap 0), tensor-parallel collectives under the GEMMs (tp_comm_overlap 1), gradients reduced in f32 (grad_reduce_bytes 4) and accumulated by add kernels (grad_accum_fusion 0)' b.err ||
  fail_with b.err "summary of the spec file's timing"

# ZeRO-3 in the sweep: the summary says how its gathers are timed
# (docs/variants.md, "ZeRO-3 and recomputation"); without it, nothing
! grep -qF 'ZeRO-3' a.err || fail_with a.err "ZeRO-3 named in a sweep without it"
"$approf" sweep --model gpt --preset gpt2-small --layers 2 --cluster 1x8 --batch 16 \
  --micro-batches 2 --submesh-space manual:1x8 --zero 0,3 --recompute full --backend model \
  --hardware c.spec --db c.db >/dev/null 2>c.err || fail_with c.err "sweep with ZeRO-3"
grep -qF "gradients reduced in the model's dtype and accumulated inside the weight-gradient GEMMs (grad_accum_fusion 1); ZeRO-3 gathers module by module, again for the backward under full recomputation where the block's later modules hold 1000000000 elements or more (DeepSpeed's stage3_max_reuse_distance)" c.err ||
  fail_with c.err "summary of a sweep with ZeRO-3"

# submesh 0 is 1x1; the others hold 2, 4 and 8 GPUs
rows() { "$sqlite" "$1" "SELECT start_layer, end_layer, submesh_index, config_index, phase,
  compute_cost, apply_cost FROM stage_profile ORDER BY 1, 2, 3, 4, 5"; }
rows a.db > a.rows
rows b.db > b.rows
[ "$(wc -l < a.rows)" -eq 20 ] || fail "expected 20 entries, got $(wc -l < a.rows)"
paste -d'|' a.rows b.rows | awk -F'|' '
  { key = $1 "," $2 "," $3 "," $4 "," $5
    if (key != $8 "," $9 "," $10 "," $11 "," $12) { print "entries differ: " key; bad = 1; next }
    if ($3 == 0) {
      # no collective; the backward adds the gradients into an f32 buffer
      # (grad_reduce_bytes 4) where it was the model dtype'"'"'s
      if ($5 == 0 && $6 != $13) { print key ": one GPU, forward cost " $6 " -> " $13; bad = 1 }
      if ($5 == 1 && !($13 > $6)) { print key ": one GPU, backward cost " $6 " -> " $13 " (expected more)"; bad = 1 }
      if ($7 != $14) { print key ": one GPU, apply " $7 " -> " $14; bad = 1 }
      one++
    } else {
      if (!($13 < $6)) { print key ": tensor-parallel cost " $6 " -> " $13 " (expected less)"; bad = 1 }
      if (!($14 > $7)) { print key ": apply " $7 " -> " $14 " (expected more)"; bad = 1 }
      tp++
    } }
  END { if (one != 6 || tp != 14) { print "one-GPU " one ", tensor-parallel " tp; bad = 1 }
        exit bad }' || fail "entries with the tensor-parallel collectives overlapped"

# asynchronous backward collectives of the linear layers
for s in a d; do
  "$approf" sweep --model gpt --preset gpt2-small --layers 2 --cluster 1x8 --batch 16 \
    --micro-batches 2 --logical-space model_parallel_only --memory-levels 3 --backend model \
    --hardware "$s.spec" --db "${s}3.db" >/dev/null 2>"$s.err" || fail_with "$s.err" "sweep $s"
done
grep -qF ' - communication: gradient sync under the backward (grad_overlap 1), tensor-parallel collectives after the kernels (tp_comm_overlap 0) except a linear layer'"'"'s backward ones, issued asynchronously under its own GEMMs (tp_async_grad set), gradients reduced' d.err ||
  fail_with d.err "summary of asynchronous backward collectives"
grep -qF 'tp_async_grad' a.err && fail_with a.err "tp_async_grad named where the spec leaves it 0"
rows a3.db > a3.rows
rows d3.db > d3.rows
paste -d'|' a3.rows d3.rows | awk -F'|' '
  { key = $1 "," $2 "," $3 "," $4 "," $5
    if (key != $8 "," $9 "," $10 "," $11 "," $12) { print "entries differ: " key; bad = 1; next }
    if ($3 == 0 && $6 != $13) { print key ": one GPU, cost " $6 " -> " $13; bad = 1 }
    if ($3 != 0) { serial += $6; async += $13 }
    if ($5 == 1 && $13 < $6) less++ }
  END { if (less < 1) { print "no backward entry costs less"; bad = 1 }
        if (!(async < serial)) { print "tensor-parallel entries " serial " s -> " async " s"; bad = 1 }
        exit bad }' || fail "entries with asynchronous backward collectives"
# a share of the SMs no smaller than the device's sm_count is refused,
# naming the file, line and field, before any database is made
sed -e 's/^nccl_channels = .*/nccl_channels = 132/' a.spec > ch.spec
sed -e 's/^tp_comm_overlap_sms = .*/tp_comm_overlap_sms = 200/' a.spec > ub.spec
for s in ch ub; do
  "$approf" sweep --model resnet50 --layers 2 --cluster 1x2 --backend model --hardware "$s.spec" \
    --db "$s.db" --quiet >/dev/null 2>"$s.err" && fail "$s.spec accepted"
  [ ! -e "$s.db" ] || fail "$s.spec: a database was made"
done
line=$(grep -n '^nccl_channels' ch.spec | cut -d: -f1)
says_text ch.err "ch.spec:$line: field 'nccl_channels': 132 channels must be fewer than the device's sm_count (132)" "nccl_channels refused"
line=$(grep -n '^tp_comm_overlap_sms' ub.spec | cut -d: -f1)
says_text ub.err "ub.spec:$line: field 'tp_comm_overlap_sms': 200 SMs must be fewer than the device's sm_count (132)" "tp_comm_overlap_sms refused"
echo "ok: communication timing"
