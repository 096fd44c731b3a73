#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The reuse table's slots started again in place at their byte cap
# (profiler/sweep/sweep_tuple.c, reuse_find: the array kept and emptied,
# not freed and regrown): under caps that start the slots again often,
# after a table of the cap's size only (2 and 8 slots) and after a
# regrowth from 1024 slots to 2048 (APPROF_REUSE_CAP_BYTES=442368, 2048
# slots of 216 bytes), with the templates' cap at 1 so that every stage asks
# the reuse table, a sweep stores the rows of one under the default caps,
# entries, placements and 'reused' flags alike; one worker and two.
# Usage: reuse_cap_clear.sh APPROF SQLITE3 WORKDIR
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
    printf('%!.17g',compute_cost) FROM stage_profile ORDER BY 1,2,3,4,5"
}
for workers in 1 2; do
  env -u APPROF_TEMPLATE_CAP_BYTES -u APPROF_REUSE_CAP_BYTES "$approf" sweep "${sweep[@]}" \
    --workers "$workers" --db "$work/w$workers-default.db" >"$work/out" 2>&1 ||
    fail_with "$work/out" "sweep, $workers workers"
  rows "$work/w$workers-default.db" >"$work/reused.default"
  for cap in 1 2000 442368; do
    db="$work/w$workers-$cap.db"
    APPROF_TEMPLATE_CAP_BYTES=1 APPROF_REUSE_CAP_BYTES=$cap "$approf" sweep "${sweep[@]}" \
      --workers "$workers" --db "$db" >"$work/out" 2>&1 ||
      fail_with "$work/out" "sweep, reuse cap $cap"
    same_sweep "$work/w$workers-default.db" 1 "$db" 1 "$workers workers, reuse cap $cap"
    rows "$db" >"$work/reused.$cap"
    same_file "$work/reused.default" "$work/reused.$cap" \
      "$workers workers, reuse cap $cap: reused flags differ"
  done
done
echo "OK: the reuse slots started again in place change no row"
