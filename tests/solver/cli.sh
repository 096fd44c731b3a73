#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# apsolve command line: golden text output, JSON shape, stored plans, and
# the documented exit codes (0 ok, 1 failure, 2 usage, 3 infeasible).
# Usage: cli.sh APSOLVE TEST_SOLVER_DB GOLDEN_DIR
set -eu
apsolve=$1
mkdb=$2
golden=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }

"$mkdb" --make-fixture "$tmp/f.db"

"$apsolve" --db "$tmp/f.db" --no-store --quiet >"$tmp/auto.txt"
diff -u "$golden/auto.txt" "$tmp/auto.txt" || fail "auto plan text differs"

"$apsolve" --db "$tmp/f.db" --no-store --quiet --parallel dp=2,tp=1,pp=2 >"$tmp/3d.txt"
diff -u "$golden/3d.txt" "$tmp/3d.txt" || fail "3-D side-by-side text differs"

"$apsolve" --db "$tmp/f.db" --no-store --quiet --micro-batches 2 --stage-option manual \
  --forward-stage-layer-ids '[[0, 1], [2, 3]]' --submesh-shapes '[(1, 2), (1, 2)]' \
  --logical-shapes '[(2, 1), (1, 2)]' \
  --option-dicts "[{}, {'force_batch_dim_to_mesh_dim': 0}]" >"$tmp/manual.txt"
diff -u "$golden/manual.txt" "$tmp/manual.txt" || fail "manual plan text differs"

# Warnings go to stderr: 2 micro-batches for 2 stages.
"$apsolve" --db "$tmp/f.db" --no-store --micro-batches 2 --stage-option uniform \
  --num-stages 2 --submesh 1x2 >/dev/null 2>"$tmp/err"
grep -q "micro-batches < 2 x 2 stages" "$tmp/err" || fail "no micro-batch warning"

# JSON, and plans stored with increasing ids.
"$apsolve" --db "$tmp/f.db" --quiet --format json >"$tmp/a.json"
"$apsolve" --db "$tmp/f.db" --quiet --format json --inference >"$tmp/b.json"
python3 - "$tmp/a.json" "$tmp/b.json" <<'PY' || fail "JSON output"
import json, sys
a = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
assert abs(a["cost"] - 0.12) < 1e-12, a["cost"]
assert a["stages"][0]["layers"] == [0, 1, 2, 3]
assert a["stages"][0]["submesh"] == [1, 4] and a["stages"][0]["logical_mesh"] == [4, 1]
assert a["stages"][0]["options"] == {"force_batch_dim_to_mesh_dim": 0}
assert a["solve_seconds"] >= 0 and a["objective"] == "training"
assert b["objective"] == "inference" and b["plan_id"] == a["plan_id"] + 1
PY

# Exit codes.
rc=0; "$apsolve" --db "$tmp/f.db" --no-store --memory-budget 1536M 2>"$tmp/err" >/dev/null || rc=$?
[ "$rc" = 3 ] || fail "infeasible budget: exit $rc, expected 3"
grep -q "needs 3.000 GB but 1.500 GB are available" "$tmp/err" || fail "memory message"
rc=0; "$apsolve" --db "$tmp/f.db" --bogus 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] || fail "unknown option: exit $rc, expected 2"
grep -q "Try 'apsolve --help'" "$tmp/err" || fail "usage hint"
rc=0; "$apsolve" --no-store 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "missing --db: exit $rc"
rc=0; "$apsolve" --db "$tmp/f.db" --stage-option manual --forward-stage-layer-ids '[[0, 2]]' \
  --submesh-shapes '[(1, 4)]' --no-store 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "bad layer ids: exit $rc"
rc=0; "$apsolve" --db "$tmp/none.db" --no-store 2>/dev/null || rc=$?
[ "$rc" = 1 ] || fail "missing database: exit $rc, expected 1"
"$apsolve" --help | grep -q -- "--micro-batches" || fail "--help"
"$apsolve" --version | grep -q "^apsolve " || fail "--version"
echo "apsolve CLI: ok"
