#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# apreport over databases that are schema-valid but crafted (issue 36):
# every index read from the database is checked against what it indexes,
# so each case below exits 1 (not 139) with a message naming the table,
# the row and the column, and leaves the database byte for byte as it was
# (--no-store and the default, which stores derived resharding tasks).
# Usage: crafted.sh TEST_REPORTS_EXE APREPORT SQLITE3
set -u
exe=$1 apreport=$2 sqlite3=$3
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
# without stored tasks, derived ones: a missing stage still refused first
case_refused "DELETE FROM resharding_task; DELETE FROM plan_stage WHERE stage_index = 0" \
  "table plan_stage" "stage_index = 1 where 0 was expected"
echo ok
