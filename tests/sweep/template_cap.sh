#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The program templates' byte cap (profiler/sweep/sweep_template.c) only
# costs time: a sweep whose templates are dropped as soon as they are kept
# (APPROF_TEMPLATE_CAP_BYTES=1, the internal knob) stores the rows of one
# under the default cap, entries, placements and the 'reused' flag alike:
# llama-3-8b 8 layers on 1x8 with every variant, one worker and two.
# Likewise the reuse table's measurements under their cap
# (APPROF_REUSE_CAP_BYTES=1, sweep_tuple.c: two slots, started again at
# every second program measured), with the templates' cap at 1 too so that
# every stage asks the reuse table: the same rows, the same 'reused' flags
# (kept by the signatures measured, not by the slots).
# Usage: template_cap.sh APPROF SQLITE3 WORKDIR
set -u
approf=$1
sqlite=$2
work=$3
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"

sweep=(--model llama --preset llama-3-8b --layers 8 --cluster 1x8 --hardware h100-sxm
       --variants all --micro-batches 8 --backend model --quiet)
for workers in 1 2; do
  for cap in default 1 reuse1; do
    db="$work/w$workers-$cap.db"
    if [ "$cap" = default ]; then
      env -u APPROF_TEMPLATE_CAP_BYTES "$approf" sweep "${sweep[@]}" --workers "$workers" \
        --db "$db" >"$work/out" 2>&1 || fail_with "$work/out" "sweep, $workers workers"
    elif [ "$cap" = reuse1 ]; then
      APPROF_TEMPLATE_CAP_BYTES=1 APPROF_REUSE_CAP_BYTES=1 "$approf" sweep "${sweep[@]}" \
        --workers "$workers" --db "$db" >"$work/out" 2>&1 ||
        fail_with "$work/out" "sweep, reuse cap 1"
    else
      APPROF_TEMPLATE_CAP_BYTES=$cap "$approf" sweep "${sweep[@]}" --workers "$workers" \
        --db "$db" >"$work/out" 2>&1 || fail_with "$work/out" "sweep, cap $cap"
    fi
  done
  same_sweep "$work/w$workers-default.db" 1 "$work/w$workers-1.db" 1 "$workers workers, cap 1"
  same_sweep "$work/w$workers-default.db" 1 "$work/w$workers-reuse1.db" 1 \
    "$workers workers, reuse cap 1"
  for f in default 1 reuse1; do
    "$sqlite" "$work/w$workers-$f.db" "SELECT start_layer,end_layer,submesh_index,config_index,
      phase,reused,printf('%!.17g',compute_cost) FROM stage_profile ORDER BY 1,2,3,4,5" \
      >"$work/reused.$f"
  done
  same_file "$work/reused.default" "$work/reused.1" "$workers workers: reused flags differ"
  same_file "$work/reused.default" "$work/reused.reuse1" \
    "$workers workers, reuse cap 1: reused flags differ"
done
echo "OK: templates and reuse slots dropped by their caps change no row"
