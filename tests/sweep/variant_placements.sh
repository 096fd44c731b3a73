#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Placements of stage variants (docs/variants.md): a sweep asked only for
# recomputing/ZeRO variants at several memory levels has no (recompute none,
# zero 0) config at the upper levels; the lowest-index config of each
# (logical mesh, force, memory level) group must hold the group's
# placements, so that every entry that can be chosen resolves to them, and
# apsolve's full estimate is available for a plan made of such variants.
# Usage: variant_placements.sh APPROF APSOLVE SQLITE3 WORKDIR
set -u
approf=$1 apsolve=$2 sqlite=$3 work=$4
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"
db=$work/v.db
"$approf" sweep --model gpt --num-layers 4 --hidden 256 --heads 4 --seq-len 128 --vocab 1000 \
  --layers 2 --cluster 1x4 --batch 8 --micro-batches 2 --dtype f16 --backend model \
  --recompute full --memory-levels 2 --zero 1 --quiet --db "$db" 2>/dev/null || fail "sweep"
levels=$("$sqlite" "$db" "SELECT count(DISTINCT memory_level) FROM sweep_config")
[ "$levels" = 2 ] || fail "expected 2 memory levels, got $levels"
plain_upper=$("$sqlite" "$db" "SELECT count(*) FROM sweep_config WHERE memory_level > 0
  AND recompute = 'none' AND zero = 0")
[ "$plain_upper" = 0 ] || fail "the space should have no plain config above level 0"
# every ok entry's group owner has placement rows for its range
missing=$("$sqlite" "$db" "
  SELECT count(*) FROM (SELECT DISTINCT e.start_layer, e.end_layer, e.submesh_index, e.config_index
    FROM stage_profile e WHERE e.status = 'ok') e
  JOIN sweep_config c ON c.sweep_id = 1 AND c.submesh_index = e.submesh_index
                      AND c.config_index = e.config_index
  WHERE NOT EXISTS (SELECT 1 FROM placement p JOIN sweep_config o
      ON o.sweep_id = p.sweep_id AND o.submesh_index = p.submesh_index
     AND o.config_index = p.config_index
    WHERE p.start_layer = e.start_layer AND p.end_layer = e.end_layer
      AND p.submesh_index = e.submesh_index AND o.logical_a = c.logical_a
      AND o.logical_b = c.logical_b AND o.force_batch_dim IS c.force_batch_dim
      AND o.memory_level = c.memory_level)")
[ "$missing" = 0 ] || fail "$missing chosen-able entries have no placements in their group"
# placements are written by the owners only
extra=$("$sqlite" "$db" "
  SELECT count(DISTINCT p.config_index) FROM placement p JOIN sweep_config c
    ON c.sweep_id = p.sweep_id AND c.submesh_index = p.submesh_index
   AND c.config_index = p.config_index
  WHERE EXISTS (SELECT 1 FROM sweep_config o WHERE o.sweep_id = c.sweep_id
    AND o.submesh_index = c.submesh_index AND o.config_index < c.config_index
    AND o.logical_a = c.logical_a AND o.logical_b = c.logical_b
    AND o.force_batch_dim IS c.force_batch_dim AND o.memory_level = c.memory_level)")
[ "$extra" = 0 ] || fail "$extra non-owner configs hold placements"
# a plan under a budget that needs the lean level prices its full estimate
lean=0
for budget in "" "--memory-budget 20MiB"; do
  # shellcheck disable=SC2086
  "$apsolve" --db "$db" --no-store --format json $budget \
    --parallel dp=1,tp=4,pp=1,recompute=full,zero=1 >"$work/p.json" 2>"$work/p.err"
  rc=$?
  [ $rc = 0 ] || [ $rc = 3 ] || fail_with "$work/p.err" "apsolve exit $rc ($budget)"
  python3 - "$work/p.json" <<'PY' || fail "full estimate missing ($budget)"
import json, sys
d = json.load(open(sys.argv[1]))
lean = 0
for p in d.get("plans", [d]):
    assert p.get("stages") and p.get("cost") is not None, p.get("kind")
    assert p.get("full_cost") is not None, (p.get("kind"), p.get("full_cost_unavailable"))
    lean += sum(s.get("memory_level", 0) > 0 for s in p["stages"])
open(sys.argv[1] + ".lean", "w").write(str(lean))
PY
  lean=$((lean + $(cat "$work/p.json.lean")))
done
[ "$lean" -gt 0 ] || fail "no plan used a memory level above 0: the test proves nothing"

# A plain sweep with out-of-memory entries says what adds the lean variants;
# a sweep with them does not repeat it.
"$approf" sweep --model gpt --preset gpt3-39b --dtype f16 --layers 8 --cluster 2x8 --variants alpa \
  --hardware a100-40g --backend model --quiet --db "$work/big.db" 2>"$work/big.err" ||
  fail "plain 39B sweep"
grep -q "out of memory in Alpa's plain space.*--memory-levels 3" "$work/big.err" ||
  fail_with "$work/big.err" "no hint towards the memory-saving variants"
"$approf" sweep --model gpt --preset gpt3-39b --dtype f16 --layers 8 --cluster 2x8 --variants alpa \
  --hardware a100-40g --backend model --quiet --memory-levels 2 --db "$work/big2.db" \
  2>"$work/big2.err" || fail "39B sweep with memory levels"
if grep -q "plain space" "$work/big2.err"; then fail "hint printed with variants on"; fi
echo "ok"
