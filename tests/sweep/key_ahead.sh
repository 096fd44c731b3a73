#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The program key asked for one tuple ahead (profiler/sweep/sweep_ahead.c):
# a sweep that asks for it (the default) stores the rows of one that does
# not (APPROF_KEY_AHEAD=0, the internal knob), entries, placements and
# 'reused' flags alike: llama-3-8b 8 layers on 1x8 with every variant, one
# worker (the tuples in order: keys asked ahead) and two (in order only in
# stretches), the templates' cap at its default and at 1 (every stage
# built, the keys still asked ahead). same_sweep compares every table; the
# rows below show the 'reused' flags and costs too.
# Usage: key_ahead.sh APPROF SQLITE3 WORKDIR
set -u
approf=$1
sqlite=$2
work=$3
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"

sweep=(--model llama --preset llama-3-8b --layers 8 --cluster 1x8 --hardware h100-sxm
       --variants all --micro-batches 8 --backend model --quiet)
rows() {
  "$sqlite" "$1" "SELECT start_layer,end_layer,submesh_index,config_index,phase,reused,
    printf('%!.17g',compute_cost),peak_memory FROM stage_profile
    ORDER BY 1,2,3,4,5"
}
for workers in 1 2; do
  for cap in default 1; do
    for ahead in 1 0; do
      db="$work/w$workers-$cap-$ahead.db"
      if [ "$cap" = default ]; then
        env -u APPROF_TEMPLATE_CAP_BYTES APPROF_KEY_AHEAD=$ahead "$approf" sweep "${sweep[@]}" \
          --workers "$workers" --db "$db" >"$work/out" 2>&1 || fail_with "$work/out" "sweep $db"
      else
        APPROF_TEMPLATE_CAP_BYTES=$cap APPROF_KEY_AHEAD=$ahead "$approf" sweep "${sweep[@]}" \
          --workers "$workers" --db "$db" >"$work/out" 2>&1 || fail_with "$work/out" "sweep $db"
      fi
      rows "$db" >"$work/rows.w$workers-$cap-$ahead"
    done
    same_sweep "$work/w$workers-$cap-0.db" 1 "$work/w$workers-$cap-1.db" 1 \
      "$workers workers, template cap $cap: key ahead"
    same_file "$work/rows.w$workers-$cap-0" "$work/rows.w$workers-$cap-1" \
      "$workers workers, template cap $cap: rows differ with the key ahead"
  done
done
echo "OK: the program key asked ahead changes no row"
