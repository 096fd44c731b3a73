#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Recomputation op (torchtitan's per-op selective activation checkpointing,
# docs/variants.md) end to end: approf sweep --recompute none,selective,full,op
# stores configs named 'op' (schema 11) whose entries keep less than none
# and more than full and rerun part of the forward; --variants all leaves
# op out; apsolve prices a --parallel plan with recompute=op and stores its
# name; apreport's headline names it and the torchtitan launch file says
# mode "selective" with selective_ac_option "op", Megatron-LM's falls back
# to full recomputation with a note; a plan with full recomputation writes
# mode "full" and no option.
# Usage: recompute_op.sh APPROF APSOLVE APREPORT SQLITE3
set -eu
approf=$1 apsolve=$2 apreport=$3 sqlite=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/../lib.sh"
db=$dir/op.db
"$approf" sweep --model llama --num-layers 2 --hidden 256 --heads 4 --seq-len 128 --vocab 1000 \
  --manual-boundaries --manual-layers --cluster 1x2 --batch 8 --micro-batches 2 --dtype bf16 \
  --recompute none,selective,full,op --backend model --hardware a100-40g --db "$db" --quiet \
  >/dev/null 2>"$dir/sweep.err" || fail_with "$dir/sweep.err" "sweep --recompute ...,op"
n=$("$sqlite" "$db" "SELECT count(*) FROM sweep_config WHERE recompute = 'op'")
[ "$n" -gt 0 ] || fail "no config named op"
# per (range, submesh, base config): op keeps less than none, more than full
bad=$("$sqlite" "$db" "
  SELECT count(*) FROM stage_profile e JOIN sweep_config c USING (sweep_id, submesh_index, config_index)
  JOIN sweep_config cn ON cn.sweep_id = c.sweep_id AND cn.submesh_index = c.submesh_index
    AND cn.logical_a = c.logical_a AND cn.logical_b = c.logical_b
    AND cn.force_batch_dim IS c.force_batch_dim AND cn.memory_level = c.memory_level
    AND cn.zero = c.zero AND cn.recompute = 'none'
  JOIN sweep_config cf ON cf.sweep_id = c.sweep_id AND cf.submesh_index = c.submesh_index
    AND cf.logical_a = c.logical_a AND cf.logical_b = c.logical_b
    AND cf.force_batch_dim IS c.force_batch_dim AND cf.memory_level = c.memory_level
    AND cf.zero = c.zero AND cf.recompute = 'full'
  JOIN stage_profile n ON n.sweep_id = e.sweep_id AND n.start_layer = e.start_layer
    AND n.end_layer = e.end_layer AND n.submesh_index = e.submesh_index
    AND n.config_index = cn.config_index AND n.phase = e.phase
  JOIN stage_profile f ON f.sweep_id = e.sweep_id AND f.start_layer = e.start_layer
    AND f.end_layer = e.end_layer AND f.submesh_index = e.submesh_index
    AND f.config_index = cf.config_index AND f.phase = e.phase
  WHERE c.recompute = 'op' AND e.status = 'ok' AND e.phase = 1
    AND e.start_layer = 0 AND e.end_layer = 1
    AND NOT (e.intermediate_size < n.intermediate_size AND e.intermediate_size > f.intermediate_size
             AND e.compute_cost > n.compute_cost AND e.compute_cost < f.compute_cost)")
total=$("$sqlite" "$db" "SELECT count(*) FROM stage_profile e JOIN sweep_config c
  USING (sweep_id, submesh_index, config_index) WHERE c.recompute = 'op' AND e.status = 'ok'
  AND e.phase = 1 AND e.start_layer = 0 AND e.end_layer = 1")
[ "$total" -gt 0 ] || fail "no op entry of the two blocks"
[ "$bad" = 0 ] || fail "$bad of $total op entries are not between none and full"
grep -q '"recompute_mask":15' "$dir/sweep.err" 2>/dev/null || true
opts=$("$sqlite" "$db" "SELECT options FROM sweep WHERE id = 1")
case $opts in *'"recompute_mask":15'*) ;; *) fail "sweep options lack the op bit: $opts" ;; esac
# --variants all leaves op out
db2=$dir/all.db
"$approf" sweep --model llama --num-layers 2 --hidden 256 --heads 4 --seq-len 128 --vocab 1000 \
  --manual-boundaries --manual-layers --cluster 1x2 --batch 8 --micro-batches 2 --dtype bf16 \
  --variants all --backend model --hardware a100-40g --db "$db2" --quiet >/dev/null 2>&1 ||
  fail "sweep --variants all"
n=$("$sqlite" "$db2" "SELECT count(*) FROM sweep_config WHERE recompute = 'op'")
[ "$n" = 0 ] || fail "--variants all profiled op"
# apsolve prices and stores it; apreport shows it and writes the launch files
"$apsolve" --db "$db" --quiet --parallel dp=2,tp=1,pp=1,recompute=op >/dev/null \
  2>"$dir/solve.err" || fail_with "$dir/solve.err" "apsolve --parallel ...,recompute=op"
rec=$("$sqlite" "$db" "SELECT c.recompute FROM plan_stage s JOIN plan p ON p.id = s.plan_id
  JOIN sweep_config c ON c.sweep_id = p.sweep_id AND c.submesh_index = s.submesh_index
  AND c.config_index = s.config_index WHERE p.id = (SELECT max(id) FROM plan)" 2>/dev/null || true)
"$apreport" --db "$db" --out "$dir/r" --name op --quiet 2>"$dir/rep.err" ||
  fail_with "$dir/rep.err" "apreport"
grep -q 'recompute op' "$dir/r/report.json" || fail "report.json does not name recompute op"
grep -q '^mode = "selective"$' "$dir/r/op_torchtitan.toml" || fail "torchtitan: mode"
grep -q '^selective_ac_option = "op"$' "$dir/r/op_torchtitan.toml" || fail "torchtitan: op"
grep -q 'cannot express' "$dir/r/op_torchtitan.toml" && fail "torchtitan runs op as priced"
grep -q "Megatron-LM cannot express torchtitan's per-op recomputation" "$dir/r/op_megatron.args" ||
  fail "megatron: no note"
grep -q '^--recompute-granularity full$' "$dir/r/op_megatron.args" || fail "megatron: not full"
# full recomputation: mode full, no option
"$apsolve" --db "$db" --quiet --parallel dp=2,tp=1,pp=1,recompute=full >/dev/null ||
  fail "apsolve full"
"$apreport" --db "$db" --out "$dir/f" --name full --export torchtitan --quiet || fail "apreport full"
grep -q '^mode = "full"$' "$dir/f/full_torchtitan.toml" || fail "torchtitan: full"
grep -q 'selective_ac_option' "$dir/f/full_torchtitan.toml" && fail "torchtitan: option under full"
echo "recompute op: $total entries, launch files ok${rec:+ (stored: $rec)}"
