#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The cp stage's transient cut on a hostile row (solver/cp_memory.c,
# docs/context-parallel.md "The transient's activation-sized part"): the
# 2-block Llama of cp_transient.py (sequence 8192, 1x2 A100-40GB, ZeRO 0
# and 3) with the two phase rows of its plain dp=2 entry (submesh 1x2,
# config 0) edited to a transient and an activation-sized part of 3 times
# their peak (at cp 2 each phase's peak would fall below zero: the two
# cuts apsolve had disagreed there, and --parallel cut the entry's whole
# peak); its ZeRO-3 entries stay as swept, but one (config 3) loses its
# forward row.
# test_cp_hostile checks --parallel's cut and the auto search's tables give
# the same cut and the same cp stage memory for every entry, the rule's by
# hand (a part above its phase's peak counts as none); apsolve --parallel
# cp=2 then prices the hostile stage at its twin's transient.
# Usage: cp_hostile.sh APPROF APSOLVE PYTHON TEST_CP_HOSTILE
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3 test=$4
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT

"$approf" sweep --db "$w/h.db" --quiet --model llama --preset llama-3-8b --num-layers 2 \
  --layers 2 --seq-len 8192 --cluster 1x2 --hardware a100-40g --backend model --batch 8 \
  --micro-batch-sizes 2 --zero 0,3 --recompute none >"$w/out" 2>&1 ||
  fail_with "$w/out" "llama sweep"
"$py" - "$w/h.db" <<'PY' || fail "the hostile edit"
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
n = con.execute(
    "UPDATE stage_cost SET temp_buffer_size = 3 * peak_memory,"
    " temp_activation_size = 3 * peak_memory"
    " WHERE temp_activation_size > 0 AND cost_id IN"
    " (SELECT cost_id FROM stage_entry WHERE start_layer = 0 AND end_layer = 1"
    " AND submesh_index = 1 AND config_index = 0)").rowcount
# an entry with one phase's row only: (0..1, 1x2, config 3, its ZeRO-3
# twin) without its forward
key = " FROM stage_entry WHERE start_layer = 0 AND end_layer = 1 AND" \
      " submesh_index = 1 AND config_index = 3 AND phase = 0"
count = lambda: con.execute("SELECT count(*)" + key).fetchone()[0]
assert count() == 1, "no forward row to delete"
con.execute("DELETE" + key)
assert count() == 0, "the forward row is still there"
con.commit()
assert n > 0, "no row with an activation-sized part"
PY
"$test" "$w/h.db" 2 >"$w/out" 2>&1 || fail_with "$w/out" "test_cp_hostile"
cat "$w/out"
"$apsolve" --db "$w/h.db" --no-store --quiet --format json --micro-batch-size 2 \
  --parallel dp=1,tp=1,pp=1,cp=2 >"$w/plan" 2>"$w/err" || fail_with "$w/err" "--parallel cp=2"
"$py" - "$w/plan" <<'PY' || fail "the hostile cp=2 plan"
import json, sys
st = json.load(open(sys.argv[1]))["plans"][0]["stages"][0]
assert st["memory_needed"] > 0, st
print("cp=2 on the hostile entry: memory %d B" % st["memory_needed"])
PY
echo ok
