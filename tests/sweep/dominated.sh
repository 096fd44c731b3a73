#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Dominated variants (docs/variants.md, "Dominated variants"): a full-space
# sweep leaves out exactly the entries the rule names, and apsolve plans
# the same on it as on the sweep that keeps them (--keep-dominated). The
# rule is restated here as SQL over the kept database, an oracle: a
# variant left out that it does not name fails, and so does one it names
# that is still stored (the rule not applied), and so does a case where it
# names none (the test would prove nothing).
# Usage: dominated.sh APPROF APSOLVE SQLITE3 WORKDIR
set -u
approf=$1 apsolve=$2 sqlite=$3 work=$4
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"
sweep() { # DB [OPTIONS]: a 4-layer GPT on 2x8 A100-40GB, every variant
  local db=$1
  shift
  "$approf" sweep --model gpt --num-layers 4 --hidden 2048 --heads 8 --seq-len 512 \
    --vocab 1000 --layers 4 --cluster 2x8 --batch 16 --micro-batches 2 --dtype f16 \
    --backend model --hardware a100-40g --variants all --db "$db" "$@"
}
sweep "$work/keep.db" --keep-dominated --quiet 2>"$work/keep.err" ||
  fail_with "$work/keep.err" "sweep --keep-dominated"
sweep "$work/drop.db" >/dev/null 2>"$work/drop.err" || fail_with "$work/drop.err" "sweep"
grep -q "dominated variants not stored" "$work/keep.err" && fail "--keep-dominated left variants out"
# stored with --keep-dominated: every tuple's two phases but the variant
# slots the stage does not have (skipped: counted, not stored)
want=$("$sqlite" "$work/keep.db" "SELECT count(*) FROM stage_entry")
tuples=$(grep -o '[0-9]* tuples' "$work/drop.err" | head -1 | cut -d' ' -f1)
skipped=$(sed -n 's/.* failed, \([0-9]*\) skipped, .*/\1/p' "$work/keep.err" | head -1)
[ "$want" = $((2 * tuples - ${skipped:-0})) ] ||
  fail "--keep-dominated stored $want entries of $tuples tuples (${skipped:-no} skipped)"
# the oracle: (i, j, s, c) of every variant the rule leaves out
"$sqlite" "$work/keep.db" >"$work/expected" <<'SQL' || fail "oracle query"
CREATE TEMP TABLE v AS
SELECT f.start_layer i, f.end_layer j, f.submesh_index s, f.config_index c,
       k.logical_a la, k.logical_b lb, k.force_batch_dim fb, k.recompute r,
       f.compute_cost f0, b.compute_cost f1, b.wgrad_cost w,
       f.apply_cost a0, b.apply_cost a1, f.peak_memory p0, b.peak_memory p1,
       f.intermediate_size m0, b.intermediate_size m1, f.initial_size n0, b.initial_size n1,
       f.available_memory v0, b.available_memory v1
FROM stage_profile f
JOIN stage_profile b ON b.sweep_id = f.sweep_id AND b.start_layer = f.start_layer
  AND b.end_layer = f.end_layer AND b.submesh_index = f.submesh_index
  AND b.config_index = f.config_index AND b.phase = 1
JOIN sweep_config k ON k.sweep_id = f.sweep_id AND k.submesh_index = f.submesh_index
  AND k.config_index = f.config_index
WHERE f.phase = 0 AND f.status = 'ok' AND b.status = 'ok';
SELECT x.i, x.j, x.s, x.c FROM v x
WHERE x.fb IS NULL AND x.r IN ('selective', 'op') AND EXISTS (
  SELECT 1 FROM v d WHERE d.i = x.i AND d.j = x.j AND d.s = x.s AND d.c <> x.c
    AND d.la = x.la AND d.lb = x.lb AND d.fb IS NULL AND d.r <> 'full'
    AND d.f0 <= x.f0 AND d.f1 <= x.f1
    AND ((d.a0 IS NULL AND x.a0 IS NULL) OR d.a0 <= x.a0)
    AND ((d.a1 IS NULL AND x.a1 IS NULL) OR d.a1 <= x.a1)
    AND ((d.w IS NULL AND x.w IS NULL) OR (d.w <= x.w AND d.f1 - d.w <= x.f1 - x.w))
    AND d.p0 <= x.p0 AND d.p1 <= x.p1 AND d.m0 <= x.m0 AND d.m1 <= x.m1
    AND d.n0 <= x.n0 AND d.n1 <= x.n1 AND d.v0 = x.v0 AND d.v1 = x.v1
    AND (d.c < x.c OR (d.f0 + d.f1 < x.f0 + x.f1 AND d.f0 < x.f0)))
ORDER BY 1, 2, 3, 4;
SQL
"$sqlite" "$work/keep.db" >"$work/actual" <<SQL || fail "left-out query"
ATTACH '$work/drop.db' AS d;
SELECT DISTINCT start_layer, end_layer, submesh_index, config_index FROM main.stage_entry e
WHERE NOT EXISTS (SELECT 1 FROM d.stage_entry x WHERE x.start_layer = e.start_layer
  AND x.end_layer = e.end_layer AND x.submesh_index = e.submesh_index
  AND x.config_index = e.config_index AND x.phase = e.phase)
ORDER BY 1, 2, 3, 4;
SQL
n=$(wc -l <"$work/expected")
[ "$n" -gt 0 ] || fail "the rule names no variant of this sweep: the test proves nothing"
diff "$work/expected" "$work/actual" >"$work/diff" ||
  fail_with "$work/diff" "left out ('>') or kept ('<') against the rule"
grep -q "dominated variants not stored: $n " "$work/drop.err" ||
  fail_with "$work/drop.err" "the summary does not count the $n left out"
# --resume of the complete sweep profiles nothing again, the left-out included
before=$("$sqlite" "$work/drop.db" "SELECT count(*) FROM stage_entry")
sweep "$work/drop.db" --resume >/dev/null 2>"$work/resume.err" || fail_with "$work/resume.err" "resume"
grep -q " 0 entries written" "$work/resume.err" || fail_with "$work/resume.err" "resume wrote entries"
[ "$("$sqlite" "$work/drop.db" "SELECT count(*) FROM stage_entry")" = "$before" ] ||
  fail "resume changed the entries"
# the same plans, prices and refusals on both (but the search's timing)
same() { # APSOLVE-ARGS
  local db
  for db in keep drop; do
    # shellcheck disable=SC2086
    "$apsolve" --db "$work/$db.db" --no-store --format json --quiet $1 >"$work/$db.json" \
      2>"$work/$db.aerr"
    echo "exit $?" >>"$work/$db.json"
    sed -E -i 's/"(solve_seconds|seconds)": [-0-9.e+]+/"\1": T/g' "$work/$db.json"
  done
  cmp -s "$work/keep.json" "$work/drop.json" && cmp -s "$work/keep.aerr" "$work/drop.aerr" ||
    fail_with "$work/drop.aerr" "apsolve $1 differs on the two databases"
}
for args in "" "--inference" "--objective alpa" "--schedule interleaved" "--schedule zb-h1" \
  "--schedule zbv" "--memory-budget 6G" "--stage-option uniform --num-stages 2 --submesh 1x8" \
  "--parallel dp=8,tp=1,pp=2,recompute=selective,zero=3" "--parallel dp=2,tp=4,pp=2" \
  "--parallel dp=2,tp=4,pp=2,recompute=full,recompute_layers=auto" \
  "--parallel dp=4,tp=4,pp=1,zero=3,dp_shard=2" "--parallel dp=2,tp=4,pp=1,cp=2" \
  "--framework megatron"; do
  same "$args"
  echo "apsolve $args: $(tail -1 "$work/drop.json")"
done
echo "ok: $n dominated variants left out, plans the same"
