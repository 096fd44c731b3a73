#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The auto search's interleaved schedule tries every chunk count whose
# chunks are whole layers of each stage, not 2 alone (solver/session_search.c
# try_chunks; docs/solver.md "Schedules"): a GPT of 8 blocks in 8 layers on
# 1x2 H100 in fp16 (torchtitan runs no fp16, so no zero-bubble plan
# competes), B = 8. Its best pipeline has two stages of 4 layers; with 4
# chunks per device the bubble is a quarter of 1F1B's and the plan beats
# the one with 2 chunks (--schedule interleaved --virtual-stages 2), so the
# auto plan takes vpp 4 (8 would split a stage's 4 layers, which the
# whole-chunk rule refuses). Its stages keep the interleaved schedule's
# in-flight micro-batches for 4 chunks (apsolve_schedule_in_flight:
# min(vB, 2 (n - k - 1) + (v - 1) n + 1) / v = 9/4 and 7/4), and --plan
# prices the stored plan again the same.
# Usage: auto_vpp.sh APPROF APSOLVE PYTHON
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
db=$w/g.db
"$approf" sweep --db "$db" --quiet --model gpt --num-layers 8 --hidden 512 --heads 8 \
  --seq-len 256 --vocab 1000 --cluster 1x2 --hardware h100-sxm --batch 32 --micro-batches 8 \
  --layers 8 --dtype fp16 >"$w/out" 2>&1 || fail_with "$w/out" "gpt sweep"
"$apsolve" --db "$db" --format json >"$w/auto.json" 2>"$w/err" || fail_with "$w/err" "auto search"
"$apsolve" --db "$db" --no-store --format json --schedule interleaved --virtual-stages 2 \
  >"$w/v2.json" 2>"$w/err" || fail_with "$w/err" "--virtual-stages 2"
id=$(grep -o '"plan_id": [0-9]*' "$w/auto.json" | head -n 1 | sed 's/.*: //')
[ -n "$id" ] || fail_with "$w/auto.json" "no stored plan id"
"$apsolve" --db "$db" --no-store --format json --plan "$id" >"$w/again.json" 2>"$w/err" ||
  fail_with "$w/err" "--plan $id"
"$py" - "$w/auto.json" "$w/v2.json" "$w/again.json" <<'PY' || fail "the auto plan's chunks"
import json, sys
def plan(path):
    d = json.load(open(path))
    return d["plans"][0] if "plans" in d else d
auto, v2, again = (plan(a) for a in sys.argv[1:4])
assert auto["schedule"] == "interleaved" and auto["virtual_stages"] == 4, (auto["schedule"], auto["virtual_stages"])
assert [s["layers"] for s in auto["stages"]] == [[0, 1, 2, 3], [4, 5, 6, 7]], auto["stages"]
assert [s["in_flight"] for s in auto["stages"]] == [2.25, 1.75], [s["in_flight"] for s in auto["stages"]]
assert v2["virtual_stages"] == 2 and auto["cost"] < v2["cost"], (auto["cost"], v2["cost"])
assert auto["full_cost"] < v2["full_cost"], (auto["full_cost"], v2["full_cost"])
assert again["virtual_stages"] == 4 and again["cost"] == auto["cost"], (again["virtual_stages"], again["cost"])
print("vpp 4 %.9g s (full %.9g s), vpp 2 %.9g s (full %.9g s)" % (auto["cost"], auto["full_cost"], v2["cost"], v2["full_cost"]))
PY
echo "ok"
