#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The apreport and approf compare command lines: --help, usage errors (exit
# 2 with "Try ..."), a missing database (exit 1), a full report run whose
# dumps match those of the library, and compare in every format.
# Usage: cli.sh TEST_REPORTS_EXE APREPORT APPROF
set -u
exe=$1 apreport=$2 approf=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/../lib.sh"

"$apreport" --version | grep -q "^apreport [0-9]" || fail "apreport --version"
"$apreport" --help >"$dir/help" || fail "apreport --help"
grep -q "^Usage: apreport" "$dir/help" || fail "help text"
# without --db: approf sweep's results.db, here absent (exit 1, named)
abs=$(cd "$(dirname "$apreport")" && pwd)/$(basename "$apreport")
(cd "$dir" && "$abs" --out x 2>"$dir/err"); rc=$?
[ $rc -eq 1 ] || fail "missing results.db: exit $rc"
grep -q "results.db" "$dir/err" || fail_with "$dir/err" "results.db not named"
"$apreport" --db "$dir/x.db" 2>"$dir/err"; rc=$?
[ $rc -eq 2 ] || fail "missing --out: exit $rc"
grep -q "Try 'apreport --help'" "$dir/err" || fail "help hint"
"$apreport" --db "$dir/x.db" --plan zero --out "$dir/x" 2>/dev/null; rc=$?
[ $rc -eq 2 ] || fail "bad --plan: exit $rc"
"$apreport" --db "$dir/none.db" --out "$dir/x" 2>"$dir/err"; rc=$?
[ $rc -eq 1 ] || fail "missing database: exit $rc"

"$exe" --write "$dir/w" >/dev/null || fail "fixture"
"$apreport" --db "$dir/w/mlp.db" --out "$dir/o" --name tut >"$dir/out" || fail "apreport run"
grep -q "^plan 1 (manual, training): 2 stages, 4 micro-batches" "$dir/out" || fail "summary"
for f in tut_input_placement_specs.txt tut_output_placement_specs.txt tut_resharding_tasks.txt \
         tut_stage_0.mem_usage.txt tut_stage_1.mem_usage.txt dp_result.txt tut_plan.py \
         report.json report.html trace.json; do
  [ -s "$dir/o/$f" ] || fail "$f not written"
done
# The second run reads the stored resharding tasks: same dump.
same_file "$dir/o/tut_resharding_tasks.txt" "$dir/w/mlp_resharding_tasks.txt" "tasks differ"
same_file "$dir/o/tut_input_placement_specs.txt" "$dir/w/mlp_input_placement_specs.txt" "specs differ"
# The schedule apsolve stored with a plan is the one simulated unless
# --schedule says otherwise.
cp "$dir/w/mlp.db" "$dir/il.db"
python3 - "$dir/il.db" <<'PY' || fail "marking the plan interleaved"
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
opts = c.execute("SELECT options FROM plan WHERE id = 1").fetchone()[0] or "{}"
d = json.loads(opts) if opts.strip() else {}
d["schedule"], d["virtual_stages"] = "interleaved", 2
c.execute("UPDATE plan SET options = ? WHERE id = 1", (json.dumps(d),))
c.commit()
PY
"$apreport" --db "$dir/il.db" --out "$dir/il" --no-store >/dev/null || fail "apreport interleaved plan"
grep -q '"virtual_stages": 2' "$dir/il/report.json" || fail "the plan's interleaved schedule not used"
"$apreport" --db "$dir/il.db" --out "$dir/il1" --no-store --schedule 1f1b >/dev/null ||
  fail "apreport --schedule 1f1b"
if grep -q '"virtual_stages": 2' "$dir/il1/report.json"; then fail "--schedule 1f1b ignored"; fi
"$apreport" --db "$dir/w/mlp.db" --plan 7 --out "$dir/o3" 2>"$dir/err"; rc=$?
[ $rc -eq 1 ] || fail "missing plan: exit $rc"
grep -q "no plan 7" "$dir/err" || fail "missing plan message"

if "$approf" --help | grep -q "^  compare"; then
  "$approf" compare --help >"$dir/h2" || fail "approf compare --help"
  "$approf" compare "$dir/w/mlp.db" 2>"$dir/err"; rc=$?
  [ $rc -eq 2 ] || fail "compare with one database: exit $rc"
  grep -q "Try 'approf compare --help'" "$dir/err" || fail "compare usage hint"
  "$approf" compare "$dir/w/mlp.db" "$dir/w/mlp.db" --format bogus 2>/dev/null; rc=$?
  [ $rc -eq 2 ] || fail "bad format: exit $rc"
  for fmt in text csv json html; do
    "$approf" compare "$dir/w/mlp.db" "$dir/w/mlp.db" --format $fmt >"$dir/cmp.$fmt" || fail "compare $fmt"
  done
  grep -q "geomean 1.0000, min 1.0000, max 1.0000" "$dir/cmp.text" || fail "self-compare ratios"
  [ "$(grep -c ',both$' "$dir/cmp.csv")" -eq 62 ] || fail "csv rows"
  grep -q '"only_a": 0' "$dir/cmp.json" || fail "json summary"
  # database text reaches the terminal masked, as approf list masks it: a
  # model and GPU name with ESC sequences, a database path with one
  esc=$(printf '\033')
  "$approf" sweep --model mlp --layers 2 --cluster 1x2 --backend model --db "$dir/e${esc}[2J.db" \
    --quiet 2>"$dir/err" || fail_with "$dir/err" "mlp sweep"
  python3 - "$dir/e${esc}[2J.db" <<'PY' || fail "planting escapes"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("UPDATE model SET name = 'm\x1b]0;pwned\x07\x1b[31mred\r\n'")
c.execute("UPDATE hardware SET gpu_model = 'g\x1b[2Jx'")
c.commit()
PY
  for fmt in text csv; do
    "$approf" compare "$dir/e${esc}[2J.db" "$dir/e${esc}[2J.db" --format $fmt >"$dir/esc.$fmt" 2>"$dir/err" ||
      fail_with "$dir/err" "compare $fmt with escapes"
    if tr -d '\n' <"$dir/esc.$fmt" | LC_ALL=C grep -q "$(printf '[\001-\010\013-\037\177]')"; then
      fail "compare --format $fmt printed a control character from the database"
    fi
  done
  grep -q "^A: .*sweep [0-9]* (m?]0;pwned??\\[31mred?? on g?\\[2Jx," "$dir/esc.text" ||
    fail_with "$dir/esc.text" "compare text: the masked names"
  "$approf" compare "$dir/w/mlp.db" "$dir/none.db" 2>/dev/null; rc=$?
  [ $rc -eq 1 ] || fail "compare with a missing database: exit $rc"
fi
echo "ok"
