#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Ranges that cannot fit (profiler/sweep/sweep_prune.c): gpt3-6.7b in f16,
# 4 layers, on 8x2 GTX 1080 Ti (11 GiB), every variant. With --skip-unfit
# the sweep leaves out the tuples whose parameters alone exceed a device
# whatever the configuration, and its summary counts them; by default it
# profiles them. Every tuple left out is out of memory in every entry of
# the default sweep, the entries of both sweeps are otherwise the same row
# for row here, and so is apsolve's plan (a feasible one).
# Usage: unfit.sh APPROF APSOLVE SQLITE3 WORKDIR
set -u
approf=$1
apsolve=$2
sqlite=$3
work=$4
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"

args=(--model gpt --preset gpt3-6.7b --layers 4 --cluster 8x2 --hardware gtx-1080ti --dtype f16
      --micro-batches 8 --variants all --backend model --quiet)
"$approf" sweep "${args[@]}" --skip-unfit --db "$work/skip.db" >/dev/null 2>"$work/skip.err" ||
  fail_with "$work/skip.err" "approf sweep --skip-unfit"
"$approf" sweep "${args[@]}" --db "$work/keep.db" >/dev/null 2>"$work/keep.err" ||
  fail_with "$work/keep.err" "approf sweep (default)"

# the count in the summary, and the tuples it accounts for
left=$(sed -n 's/^ - left out: \([0-9]*\) tuples out of memory whatever their configuration.*/\1/p' \
  "$work/skip.err")
[ -n "$left" ] && [ "$left" -gt 0 ] || fail_with "$work/skip.err" "no 'left out' count in the summary"
grep -q "left out" "$work/keep.err" && fail_with "$work/keep.err" "the default sweep left tuples out"
tuples() { sed -n 's/^approf: sweep [0-9]* done: \([0-9]*\) tuples.*/\1/p' "$1"; }
[ "$(tuples "$work/keep.err")" = $(($(tuples "$work/skip.err") + left)) ] ||
  fail "tuples: $(tuples "$work/skip.err") + $left left out != $(tuples "$work/keep.err")"

# entries: the same rows where both have them; the rows only the default
# sweep has are the left-out tuples' (two phases each, less those of slots the
# stage does not have: counted as skipped and not stored), none of them 'ok'
skipped() { sed -n 's/^approf: sweep [0-9]* done: .* \([0-9]*\) skipped,.*/\1/p' "$1"; }
[ -n "$(skipped "$work/keep.err")" ] && [ -n "$(skipped "$work/skip.err")" ] ||
  fail_with "$work/keep.err" "no 'skipped' count in the summary"
left_skipped=$(($(skipped "$work/keep.err") - $(skipped "$work/skip.err")))
q() { "$sqlite" "$work/keep.db" "ATTACH '$work/skip.db' AS s; $1"; }
cols="start_layer, end_layer, submesh_index, config_index, phase, compute_cost, peak_memory,
      invar_size, outvar_size, temp_buffer_size, available_memory, intermediate_size,
      initial_size, repeats, spread, status, error, apply_cost"
[ "$(q "SELECT count(*) FROM (SELECT $cols FROM s.stage_profile EXCEPT
                              SELECT $cols FROM main.stage_profile)")" = 0 ] ||
  fail "entries of the --skip-unfit sweep that the default sweep does not have"
extra="SELECT $cols FROM main.stage_profile EXCEPT SELECT $cols FROM s.stage_profile"
[ "$(q "SELECT count(*) FROM ($extra)")" = $((2 * left - left_skipped)) ] ||
  fail "the default sweep has $(q "SELECT count(*) FROM ($extra)") more entries, not $((2 * left - left_skipped))"
[ "$(q "SELECT count(*) FROM ($extra) WHERE status = 'ok'")" = 0 ] ||
  fail "a tuple left out has an 'ok' entry"
[ "$(q "SELECT count(*) FROM s.stage_profile WHERE status = 'ok'")" -gt 0 ] ||
  fail "no entry fits at all"

# placements: the --skip-unfit sweep's are the default sweep's
pcols="start_layer, end_layer, submesh_index, config_index, tensor_index, tensor_name, role,
       shape, dtype, sharding_spec"
[ "$(q "SELECT count(*) FROM (SELECT $pcols FROM s.placement EXCEPT
                              SELECT $pcols FROM main.placement)")" = 0 ] ||
  fail "placements of the --skip-unfit sweep that the default sweep does not have"

# the plan, byte for byte (but the solve time)
for db in skip keep; do
  "$apsolve" --db "$work/$db.db" --no-store 2>&1 | grep -v 'solved in' >"$work/$db.plan"
done
grep -q '^Result forward_stage_layer_ids' "$work/skip.plan" || fail_with "$work/skip.plan" "no plan"
same_file "$work/skip.plan" "$work/keep.plan" "apsolve's plan differs with --skip-unfit"
echo "ok: $left tuples left out, the same entries otherwise and the same plan"
