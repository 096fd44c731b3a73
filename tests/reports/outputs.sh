#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# apreport's outputs are untrusted too (docs/reliability.md "Outputs"):
#  - a database whose tensor names, dtype and shape try to break out of
#    HTML, Python literals and comments, read through a --db path holding a
#    newline: plan.py runs (with a stub alpa module) without printing PWNED,
#    the Python dumps parse and call nothing but the placement constructors,
#    report.html holds no markup from the database, every JSON file parses,
#    the launch files parse and keep the name inside comments and strings;
#  - a symbolic link planted at an output path is refused (exit 1, the path
#    named) and its target left alone;
#  - a write that fails half way (file-size limit) leaves every earlier
#    output as it was and no temporary file;
#  - standard output on /dev/full: exit 1 with a message;
#  - a plan stored as infeasible, or with an infinite cost: every output
#    marked, no plan code unless --allow-infeasible.
# Usage: outputs.sh TEST_REPORTS_EXE APREPORT SQLITE3 PYTHON3
set -u
exe=$1 apreport=$2 sqlite3=$3 python=$4
dir=$(mktemp -d)
mounted=0
trap '[ $mounted -eq 1 ] && umount "$dir/mnt"; rm -rf "$dir"' EXIT
. "$(dirname "$0")/../lib.sh"

"$exe" --write-hostile "$dir/w" >/dev/null || fail_with "$dir/err" "hostile fixture"
nl='
'
bad="$dir/p${nl}print('PWNED')${nl}#.db"
cp "$dir/w/hostile.db" "$bad" || fail_with "$dir/err" "copy"
"$apreport" --db "$bad" --out "$dir/o" --quiet 2>"$dir/err" || fail_with "$dir/err" "apreport on the hostile database"

# plan.py runs as Python and prints nothing
mkdir "$dir/stub"
cat >"$dir/stub/alpa.py" <<'EOF'
class _Any:
    def __init__(self, *a, **k): pass
ManualStageOption = PipeshardParallel = AutoLayerOption = _Any
EOF
PYTHONPATH="$dir/stub" "$python" "$dir/o/plan1_plan.py" >"$dir/py.out" 2>&1 || fail_with "$dir/err" "plan.py does not run: $(cat "$dir/py.out")"
[ -s "$dir/py.out" ] && fail_with "$dir/err" "plan.py printed: $(cat "$dir/py.out")"
head -1 "$dir/o/plan1_plan.py" | grep -q "^# Plan 1 of 'p\\\\nprint(\\\\'PWNED\\\\')\\\\n#.db' (sweep 1)" ||
  fail_with "$dir/err" "plan.py header: $(head -1 "$dir/o/plan1_plan.py")"

# The launch files: the database name with its newlines stays inside a
# comment, a JSON string and a TOML string; each file parses
"$python" - "$dir/o" <<'EOF' || fail_with "$dir/err" "launch files of the hostile database"
import json, shlex, sys
d = sys.argv[1]
label = "p\nprint('PWNED')\n#.db"
for f in ("plan1_megatron.args", "plan1_torchtitan.toml"):
    for line in open(d + "/" + f):
        assert not line.startswith("print("), (f, line)
words = shlex.split(open(d + "/plan1_megatron.args").read(), comments=True)
assert words and all(w.startswith("--") or w.isdigit() for w in words), words
j = json.load(open(d + "/plan1_deepspeed.json"))
assert any(("of " + label + " (sweep 1)") in c for c in j["_comment"][:2]), j["_comment"][:2]
try:
    import tomllib
except ImportError:
    sys.exit(0)
t = tomllib.load(open(d + "/plan1_torchtitan.toml", "rb"))
assert t["job"]["description"] == "approf plan 1 of " + label + " (sweep 1)", t["job"]
assert set(t) == {"job", "parallelism", "training", "activation_checkpoint"}, t.keys()
EOF

# The Python dumps: parse, call only the constructors, keep the names exactly
cat >"$dir/check.py" <<'EOF'
import ast, sys
allowed = {"PlacementSpec", "ShapedArray", "ShardingSpec", "NoSharding", "Chunked",
           "ShardedAxis", "Replicated"}
for path in sys.argv[2:]:
    text = open(path, encoding="ascii").read()   # non-ASCII is escaped
    text = text.replace("[])", "[()])")          # Alpa's scalar float32[] is no Python
    tree = ast.parse(text, mode="eval")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id in allowed):
                sys.exit("%s: a call to %s" % (path, ast.dump(node.func)))
    keys = [k.value for n in ast.walk(tree) if isinstance(n, ast.Dict) for k in n.keys]
    if path.endswith("input_placement_specs.txt") and sys.argv[1] not in keys:
        sys.exit("%s: the input's name is not a key: %r" % (path, keys))
EOF
"$python" - "$dir/check.py" "$dir/o/plan1_input_placement_specs.txt" \
  "$dir/o/plan1_output_placement_specs.txt" <<'EOF' || fail_with "$dir/err" "Python dumps"
import sys, runpy
want = "x'\nprint('PWNED')\n#<img src=x onerror=alert(1)>\u00e9\xff"
sys.argv = [sys.argv[1], want] + sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
EOF
# in the text dumps, PWNED appears only inside a quoted literal
for f in "$dir"/o/*.txt; do
  if grep -n "PWNED" "$f" | grep -v "^[0-9]*:#\|'" >/dev/null; then fail_with "$dir/err" "$f: raw text"; fi
done
grep -q "^# tensor: 'layer1/out\"\\\\'\\\\r\\\\n__import__" "$dir/o/plan1_resharding_tasks.txt" ||
  fail_with "$dir/err" "resharding comment: $(cat "$dir/o/plan1_resharding_tasks.txt")"

# report.html: nothing from the database became markup
grep -q "<img\|<script\|</pre><" "$dir/o/report.html" && fail_with "$dir/err" "markup from the database in report.html"
grep -q "&lt;img src=x onerror=alert(1)&gt;" "$dir/o/report.html" || fail_with "$dir/err" "escaped name missing"

# every JSON file parses
for f in report.json trace.json; do
  "$python" -c 'import json,sys; json.load(open(sys.argv[1]))' "$dir/o/$f" || fail_with "$dir/err" "$f is not JSON"
done

# a symbolic link at an output path: refused, its target untouched
mkdir "$dir/s"
echo precious >"$dir/victim"
ln -s "$dir/victim" "$dir/s/report.json"
"$apreport" --db "$dir/w/hostile.db" --out "$dir/s" --quiet 2>"$dir/err"; rc=$?
[ $rc -eq 1 ] || fail_with "$dir/err" "symlink at report.json: exit $rc"
grep -q "^apreport: $dir/s/report.json: is a symbolic link" "$dir/err" || fail_with "$dir/err" "symlink message"
[ "$(cat "$dir/victim")" = precious ] || fail_with "$dir/err" "the link's target was overwritten"
ls -A "$dir/s" | grep -q '\.tmp$' && fail_with "$dir/err" "temporary file left (symlink)"

# a disk that fills up half way: earlier outputs unchanged, no temporary file
# (a small tmpfs, which needs CAP_SYS_ADMIN: skipped without it)
"$exe" --write "$dir/f" >/dev/null || fail_with "$dir/err" "fixture"
mkdir "$dir/mnt"
if mount -t tmpfs -o size=256k tmpfs "$dir/mnt" 2>/dev/null; then
  mounted=1
  "$apreport" --db "$dir/f/mlp.db" --no-store --out "$dir/mnt/o" --quiet || fail_with "$dir/err" "report on tmpfs"
  cp -R "$dir/mnt/o" "$dir/o.ref"
  # fill the file system, then free 8 KiB: less than report.html needs
  dd if=/dev/zero of="$dir/mnt/filler" bs=4096 2>/dev/null
  size=$(wc -c <"$dir/mnt/filler")
  truncate -s $((size - 8192)) "$dir/mnt/filler"
  "$apreport" --db "$dir/f/mlp.db" --no-store --out "$dir/mnt/o" --quiet 2>"$dir/err"; rc=$?
  [ $rc -eq 1 ] || fail_with "$dir/err" "full disk: exit $rc"
  grep -q "^apreport: $dir/mnt/o/[a-z_0-9.]*: cannot write: No space left on device" "$dir/err" ||
    fail_with "$dir/err" "full-disk message"
  for f in "$dir"/o.ref/*; do
    b=$(basename "$f")
    cmp -s "$f" "$dir/mnt/o/$b" || fail_with "$dir/err" "$b changed or truncated by the failed run"
  done
  ls -A "$dir/mnt/o" | grep -q '\.tmp$' && fail_with "$dir/err" "temporary file left (full disk)"
  umount "$dir/mnt" && mounted=0
else
  echo "skip: full disk (mounting a tmpfs needs CAP_SYS_ADMIN)"
fi

# standard output on /dev/full
if [ -w /dev/full ]; then
  "$apreport" --db "$dir/w/hostile.db" --out "$dir/o" >/dev/full 2>"$dir/err"; rc=$?
  [ $rc -eq 1 ] || fail_with "$dir/err" "apreport > /dev/full: exit $rc"
  grep -q "^apreport: write error on standard output: No space left on device" "$dir/err" ||
    fail_with "$dir/err" "/dev/full message"
fi

# infeasible plans: stored infeasible, or with an infinite cost
for how in "feasible = 0" "cost = 1e999"; do
  cp "$dir/f/mlp.db" "$dir/inf.db"
  "$sqlite3" "$dir/inf.db" "UPDATE plan SET $how" || fail_with "$dir/err" "sqlite3"
  rm -rf "$dir/i"
  "$apreport" --db "$dir/inf.db" --no-store --out "$dir/i" >"$dir/out" 2>"$dir/err" || fail_with "$dir/err" "$how: apreport"
  [ -e "$dir/i/plan1_plan.py" ] && fail_with "$dir/err" "$how: plan code written for an infeasible plan"
  grep -q "INFEASIBLE" "$dir/out" || fail_with "$dir/err" "$how: summary not marked"
  grep -q "<b>infeasible</b>" "$dir/i/report.html" || fail_with "$dir/err" "$how: html not marked"
  grep -q "No code: the plan is infeasible" "$dir/i/report.html" || fail_with "$dir/err" "$how: html code"
  "$python" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["plan"]["feasible"] is False; assert any("INFEASIBLE" in w for w in d["warnings"])' \
    "$dir/i/report.json" || fail_with "$dir/err" "$how: report.json"
  "$python" -c 'import json,sys; json.load(open(sys.argv[1]))' "$dir/i/trace.json" || fail_with "$dir/err" "$how: trace.json"
  for f in "$dir"/i/*.txt; do
    head -1 "$f" | grep -q "^# INFEASIBLE PLAN" || fail_with "$dir/err" "$how: $f not marked"
  done
  "$apreport" --db "$dir/inf.db" --no-store --allow-infeasible --out "$dir/i" --quiet || fail_with "$dir/err" "$how: --allow-infeasible"
  head -1 "$dir/i/plan1_plan.py" | grep -q "^# INFEASIBLE PLAN" || fail_with "$dir/err" "$how: plan.py not marked"
done
# a message names the database once ("FILE: FILE: ..." before)
cp "$dir/f/mlp.db" "$dir/m.db"
"$sqlite3" "$dir/m.db" "UPDATE plan_stage SET fwd_cost = 5e307" || fail_with "$dir/err" "sqlite3"
"$apreport" --db "$dir/m.db" --no-store --out "$dir/m" --quiet 2>"$dir/err"
grep -qF "$dir/m.db: $dir/m.db:" "$dir/err" && fail_with "$dir/err" "the database named twice"
echo ok
