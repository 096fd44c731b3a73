#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Wrong answers a new user hits (issue 14), on TEST_SOLVER_DB's fixture
# (4 layers on 1x4):
#  - --inference prices the forward module only: every stage's cost is its
#    forward cost, the backward cost is 0;
#  - a one-stage plan prints no "micro-batches < 2 x stages" warning;
#  - standard output on /dev/full: exit 1 with a message (also --help);
#  - a plan that exits 3 (infeasible) is stored marked infeasible;
#  - a sweep beyond the solver's limits is named ("cluster 100000x4"), not
#    "invalid argument"; an unknown short option is named.
# Usage: wrong_answers.sh APSOLVE TEST_SOLVER_DB PYTHON3 SQLITE3
set -u
apsolve=$1 mkdb=$2 python=$3 sqlite3=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
. "$(dirname "$0")/../lib.sh"

"$mkdb" --make-fixture "$tmp/f.db" || fail_with "$tmp/err" "fixture"

# --inference: forward only
"$apsolve" --db "$tmp/f.db" --no-store --quiet --inference --format json >"$tmp/inf.json" ||
  fail_with "$tmp/err" "apsolve --inference"
"$python" - "$tmp/inf.json" <<'PY' || fail_with "$tmp/err" "--inference stage costs"
import json, sys
d = json.load(open(sys.argv[1]))
p = d[0] if isinstance(d, list) else d.get("plans", [d])[0] if "plans" in d else d
assert p["objective"] == "inference", p["objective"]
for st in p["stages"]:
    assert st["bwd_cost"] == 0, st
    assert abs(st["cost"] - st["fwd_cost"]) <= 1e-12 * st["cost"], st
assert abs(p["cost"] - len(p["stages"]) * max(s["cost"] for s in p["stages"])) <= 1e-12
PY
# the forward cost of that stage is the database's phase-0 entry
"$python" - "$tmp/inf.json" "$tmp/f.db" "$sqlite3" <<'PY' || fail_with "$tmp/err" "--inference: not the forward entry"
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
p = d[0] if isinstance(d, list) else d
for st in p["stages"]:
    q = ("SELECT compute_cost FROM stage_profile WHERE sweep_id = 1 AND start_layer = %d AND "
         "end_layer = %d AND submesh_index = %d AND config_index = %d AND phase = 0"
         % (st["layers"][0], st["layers"][-1], st["submesh_index"], st["config_index"]))
    fwd = float(subprocess.check_output([sys.argv[3], sys.argv[2], q]).decode())
    assert abs(st["cost"] - fwd) <= 1e-12 * fwd, (st["cost"], fwd)
PY

# one stage, one micro-batch: no "2 x stages" warning
"$apsolve" --db "$tmp/f.db" --no-store --micro-batches 1 --stage-option uniform \
  --num-stages 1 --submesh 1x4 >/dev/null 2>"$tmp/err" || fail_with "$tmp/err" "one-stage plan"
grep -q "micro-batches <" "$tmp/err" && fail_with "$tmp/err" "one-stage plan warns about micro-batches"
# two stages, two micro-batches: still warned
"$apsolve" --db "$tmp/f.db" --no-store --micro-batches 2 --stage-option uniform \
  --num-stages 2 --submesh 1x2 >/dev/null 2>"$tmp/err"
grep -q "2 micro-batches < 2 x 2 stages" "$tmp/err" || fail_with "$tmp/err" "two-stage warning missing"

# standard output on /dev/full
if [ -w /dev/full ]; then
  "$apsolve" --db "$tmp/f.db" --no-store --quiet >/dev/full 2>"$tmp/err"; rc=$?
  [ $rc -eq 1 ] || fail_with "$tmp/err" "apsolve > /dev/full: exit $rc"
  grep -q "^apsolve: write error on standard output: No space left on device" "$tmp/err" ||
    fail_with "$tmp/err" "/dev/full message"
  "$apsolve" --help >/dev/full 2>"$tmp/err"; rc=$?
  [ $rc -eq 1 ] || fail_with "$tmp/err" "apsolve --help > /dev/full: exit $rc"
fi

# an infeasible given plan: exit 3, stored marked infeasible
"$apsolve" --db "$tmp/f.db" --quiet --memory-budget 1G --stage-option uniform \
  --num-stages 1 --submesh 1x4 >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 3 ] || fail_with "$tmp/err" "infeasible uniform plan: exit $rc"
[ "$("$sqlite3" "$tmp/f.db" "SELECT kind, feasible FROM plan ORDER BY id DESC LIMIT 1")" = "uniform|0" ] ||
  fail_with "$tmp/err" "infeasible plan stored as feasible"

# messages that name what is wrong
cp "$tmp/f.db" "$tmp/big.db"
"$sqlite3" "$tmp/big.db" "UPDATE sweep SET cluster_hosts = 100000" || fail_with "$tmp/err" "sqlite3"
"$apsolve" --db "$tmp/big.db" --no-store --quiet >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail_with "$tmp/err" "cluster 100000x4: exit $rc"
grep -q "invalid argument" "$tmp/err" && fail_with "$tmp/err" "a message that names nothing"
grep -q "100000" "$tmp/err" || fail_with "$tmp/err" "the cluster is not named"
"$apsolve" -q --db "$tmp/f.db" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || fail_with "$tmp/err" "-q: exit $rc"
grep -q "^apsolve: unknown or incomplete option '-q'" "$tmp/err" || fail_with "$tmp/err" "unknown short option not named"
echo ok
