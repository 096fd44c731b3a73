#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# apreport over databases that are schema-valid but crafted (issue 36):
# every index read from the database is checked against what it indexes,
# so each case below exits 1 (not 139) with a message naming the table,
# the row and the column, and leaves the database byte for byte as it was
# (--no-store and the default, which stores derived resharding tasks).
# Then the outputs' bounds (docs/reports.md "Bounded outputs"): a plan of
# 100 000 micro-batches, a cluster of 1024 x 1024 and 5000 resharding tasks
# set with plain SQL give a trace.json and a report.html of at most 1 MiB,
# each saying what it summarised or left out.
# Usage: crafted.sh TEST_REPORTS_EXE APREPORT SQLITE3 PYTHON3
set -u
exe=$1 apreport=$2 sqlite3=$3 python=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/../lib.sh"

"$exe" --write "$dir/w" >/dev/null || fail "fixture"
db0="$dir/w/mlp.db"
n=0
# case SQL WANT...: apreport on a copy changed by SQL exits 1 naming WANT
case_refused() {
  sql=$1
  shift
  n=$((n + 1))
  for store in --no-store ""; do
    cp "$db0" "$dir/c.db" || fail "copy"
    "$sqlite3" "$dir/c.db" "$sql" || fail "sqlite3: $sql"
    sum=$(cksum <"$dir/c.db")
    # shellcheck disable=SC2086
    "$apreport" --db "$dir/c.db" $store --out "$dir/o$n" --quiet 2>"$dir/err"
    expect_rc 1 $? "$dir/err" "$sql ($store)"
    for w in "$@"; do
      grep -qF -- "$w" "$dir/err" || fail_with "$dir/err" "$sql: '$w' not in the message"
    done
    [ "$(cksum <"$dir/c.db")" = "$sum" ] || fail "$sql: the database changed"
  done
}

case_refused "UPDATE resharding_task SET dst_stage = 60000 WHERE task_index = 0" \
  "table resharding_task, row (plan_id=1, task_index=0): column dst_stage = 60000"
case_refused "UPDATE resharding_task SET dst_stage = 7 WHERE task_index = 0" \
  "table resharding_task" "column dst_stage = 7" "2 stages"
case_refused "UPDATE resharding_task SET src_stage = 5 WHERE task_index = 0" \
  "table resharding_task" "column src_stage = 5"
case_refused "DELETE FROM plan_stage WHERE stage_index = 0" \
  "table plan_stage, row (plan_id=1, stage_index=1): column stage_index = 1 where 0 was expected"
case_refused "DELETE FROM plan_stage WHERE stage_index = 1" \
  "table resharding_task" "column dst_stage = 1" "1 stage)"
case_refused "UPDATE plan_stage SET stage_index = 9 WHERE stage_index = 1" \
  "table plan_stage" "stage_index = 9 where 1 was expected"
case_refused "UPDATE plan_stage SET end_layer = 65535 WHERE stage_index = 1" \
  "table plan_stage, row (plan_id=1, stage_index=1): column end_layer = 65535 is past the sweep's"
case_refused "UPDATE plan_stage SET start_layer = 0 WHERE stage_index = 1" \
  "table plan_stage" "column start_layer = 0 where"
# without stored tasks, derived ones: a missing stage still refused first
case_refused "DELETE FROM resharding_task; DELETE FROM plan_stage WHERE stage_index = 0" \
  "table plan_stage" "stage_index = 1 where 0 was expected"

# bounded outputs
# bounded SQL WHAT [FILE]: apreport on a copy changed by SQL exits 0 and
# writes a trace.json and a report.html (and FILE) of at most 1 MiB each;
# report.json grows with the rows of the database, not with a number in it
bounded() {
  cp "$db0" "$dir/b.db" || fail "copy"
  "$sqlite3" "$dir/b.db" "$1" || fail "sqlite3: $1"
  rm -rf "$dir/b"
  "$apreport" --db "$dir/b.db" --no-store --out "$dir/b" --quiet 2>"$dir/err"
  expect_rc 0 $? "$dir/err" "$2"
  for f in trace.json report.html $3; do
    size=$(wc -c <"$dir/b/$f")
    [ "$size" -le 1048576 ] || fail "$2: $f has $size bytes"
  done
}
bounded "UPDATE plan SET micro_batches = 100000" "100000 micro-batches" report.json
"$python" - "$dir/b/trace.json" <<'PY' || fail "trace.json of 100000 micro-batches"
import json, sys
t = json.load(open(sys.argv[1]))
mbs = {e["args"]["micro_batch"] for e in t["traceEvents"] if e["ph"] == "X" and "micro_batch" in e["args"]}
assert mbs == set(range(32)) | set(range(99968, 100000)), sorted(mbs)[:40]
summ = [e for e in t["traceEvents"] if e.get("cat") == "summarised"]
assert {e["pid"] for e in summ} == {0, 1}, summ
for e in summ:
    assert e["name"] == "micro-batches 32-99967 (summarised)" and e["tid"] == 2, e
    assert e["args"]["first_micro_batch"] == 32 and e["args"]["last_micro_batch"] == 99967, e
    assert e["args"]["events"] > 0 and e["dur"] > 0, e
assert t["otherData"]["summarised_micro_batches"] == [32, 99967], t["otherData"]
PY
grep -q "Micro-batches 32 to 99967 (99936 of 100000) are summarised" "$dir/b/report.html" ||
  fail "report.html does not say what it summarised"
bounded "UPDATE sweep SET cluster_hosts = 1024, cluster_gpus = 1024" "a 1024 x 1024 cluster" report.json
grep -q "hosts 64 to 1023 and GPUs 64 to 1023 of each host are not drawn" "$dir/b/report.html" ||
  fail "report.html does not say what it left out of the mesh"
bounded "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 4999)
         INSERT INTO resharding_task SELECT plan_id, i, src_stage, dst_stage, tensor_name || i, shape,
         dtype, src_spec, dst_spec, bytes, strategy, seconds FROM resharding_task, k" "5000 tasks" ""
grep -q "4000 more resharding tasks are not shown (report.json lists all 5000)" "$dir/b/report.html" ||
  fail "report.html does not say which tasks it left out"
"$python" -c 'import json,sys; assert len(json.load(open(sys.argv[1]))["resharding_tasks"]) == 5000' \
  "$dir/b/report.json" || fail "report.json lost tasks"
# the simulation holds every pass: more than REP_MAX_PASSES (2^22) stage x
# micro-batch x chunk passes are refused before it starts, naming the plan
cp "$db0" "$dir/p.db" || fail "copy"
"$sqlite3" "$dir/p.db" "UPDATE plan SET micro_batches = 1048576" || fail "sqlite3"
sum=$(cksum <"$dir/p.db")
"$apreport" --db "$dir/p.db" --out "$dir/p" --quiet --schedule interleaved --virtual-stages 4 2>"$dir/err"
expect_rc 1 $? "$dir/err" "2 stages x 2^20 micro-batches x 4 chunks"
grep -qF "plan 1: 2 stages x 1048576 micro-batches x 4 chunks is 8388608 passes to simulate, more than 4194304" "$dir/err" ||
  fail_with "$dir/err" "the passes message"
[ "$(cksum <"$dir/p.db")" = "$sum" ] || fail "passes: the database changed"
echo ok
